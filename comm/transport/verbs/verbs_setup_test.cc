// The verbs library and device checks that run on any host (this one has no RDMA device).
#include <doctest/doctest.h>

#include "comm/error.h"
#include "comm/transport/verbs/ibverbs_api.h"
#include "comm/transport/verbs/verbs_objects.h"

namespace cc::comm::verbs {
namespace {

TEST_CASE("ibverbs: a library that is not there is reported, not fatal") {
  std::string why;
  CHECK(load_ibverbs(why, "libibverbs-not-here.so.9") == nullptr);
  CHECK(why.find("cannot load libibverbs-not-here.so.9") != std::string::npos);
}

TEST_CASE("ibverbs: a device the host does not have is named, with what to do") {
  std::string why;
  const IbvApi* api = load_ibverbs(why);
  if (api == nullptr) {
    MESSAGE("no verbs library here: " << why);
    return;
  }
  try {
    open_device(*api, "rdma_en_nothere", 2);
    FAIL("opened a device that does not exist");
  } catch (const Error& e) {
    // Here (no RDMA stack) the list itself fails; in the rxe guest the name is not found.
    const std::string& m = e.message();
    CHECK(m.rfind("rank 2: ", 0) == 0);
    CHECK(m.find("rdma_en_nothere") != std::string::npos);
    const bool listed = m.find("RDMA device rdma_en_nothere does not exist on this host") !=
                        std::string::npos;
    const bool no_stack = m.find("cannot list RDMA devices") != std::string::npos;
    CHECK((listed || no_stack));
  }
}

TEST_CASE("GID scan: the IPv4-mapped entry is found wherever it is, or reported missing") {
  ibv_gid g[3]{};
  g[0].raw[0] = 0xfe;
  g[0].raw[1] = 0x80;
  CHECK(find_ipv4_mapped(g, 3) == -1);
  g[2].raw[10] = 0xff;
  g[2].raw[11] = 0xff;
  g[2].raw[12] = 10;
  CHECK(find_ipv4_mapped(g, 3) == 2);
  g[1] = g[2];
  CHECK(find_ipv4_mapped(g, 3) == 1);
}

TEST_CASE("GID scan: of several IPv4-mapped GIDs, RoCE v2 and a planned address win") {
  // NVIDIA/nccl#769's ConnectX table: fe80 v1, fe80 v2, ::ffff:200.0.209.6 v1, the same v2.
  ibv_gid g[4]{};
  g[0].raw[0] = g[1].raw[0] = 0xfe;
  g[0].raw[1] = g[1].raw[1] = 0x80;
  for (int i : {2, 3}) {
    g[i].raw[10] = g[i].raw[11] = 0xff;
    g[i].raw[12] = 200;
    g[i].raw[14] = 209;
    g[i].raw[15] = 6;
  }
  const int types[4] = {kGidTypeRoceV1, kGidTypeRoceV2, kGidTypeRoceV1, kGidTypeRoceV2};
  CHECK(find_ipv4_mapped(g, 4, types) == 3);
  CHECK(find_ipv4_mapped(g, 4) == 2);  // types unknown: the first, as before
  const int only_v1[4] = {kGidTypeRoceV1, kGidTypeRoceV1, kGidTypeRoceV1, kGidTypeRoceV1};
  CHECK(find_ipv4_mapped(g, 4, only_v1) == 2);  // a v1 GID is still better than none
  // A Mac port with its self-assigned address at index 1 and the planned one at index 3
  // (ml-explore/mlx#3467): the planned one, which macOS does not renumber.
  ibv_gid m[4]{};
  m[1].raw[10] = m[1].raw[11] = 0xff;
  m[1].raw[12] = 169;
  m[1].raw[13] = 254;
  m[1].raw[14] = 205;
  m[1].raw[15] = 255;
  m[3] = m[1];
  m[3].raw[12] = 10;
  m[3].raw[13] = 231;
  m[3].raw[14] = 0;
  m[3].raw[15] = 1;
  CHECK(gid_self_assigned(m[1]));
  CHECK_FALSE(gid_self_assigned(m[3]));
  CHECK(find_ipv4_mapped(m, 4) == 3);
  CHECK(find_ipv4_mapped(m, 3) == 1);  // only the self-assigned one: used (with a warning)
}

TEST_CASE("GID scan: without an IPv4-mapped GID the link-local one is used, index 1 first") {
  ibv_gid g[4]{};
  CHECK(find_link_local(g, 4) == -1);  // all zero: nothing usable
  g[0].raw[0] = 0xfe;
  g[0].raw[1] = 0x80;
  g[0].raw[15] = 1;
  CHECK(find_link_local(g, 4) == 0);  // the only one
  g[2] = g[0];
  g[2].raw[15] = 2;
  CHECK(find_link_local(g, 4) == 2);  // index 0 can route elsewhere on a Mac: a later one wins
  g[1].raw[0] = 0x20;                 // a global address is not link-local
  CHECK(find_link_local(g, 4) == 2);
  g[1].raw[0] = 0xfe;
  g[1].raw[1] = 0xbf;                 // fe80::/10 covers febf
  CHECK(find_link_local(g, 4) == 1);
  CHECK(gid_text(g[0]) == "fe80::1");
  ibv_gid v4{};
  v4.raw[10] = v4.raw[11] = 0xff;
  v4.raw[12] = 10;
  v4.raw[15] = 2;
  CHECK(gid_text(v4) == "::ffff:10.0.0.2");
}

TEST_CASE("wr_id layout: tag, direction and slot round-trip") {
  const uint64_t s = wr_id(true, 62), r = wr_id(false, 0xffffffffu);
  CHECK((s >> 56) == 0xCC);
  CHECK((s & kWrSend) != 0);
  CHECK((s & 0xffffffffu) == 62);
  CHECK((r & kWrSend) == 0);
  CHECK((r & 0xffffffffu) == 0xffffffffu);
}

}  // namespace
}  // namespace cc::comm::verbs
