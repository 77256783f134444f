#include "discovery/ibv_devinfo.h"

#include <string>

#include <doctest/doctest.h>

#include "discovery/test_fixtures.h"

using namespace cc::discovery;
using cc::discovery::testing::fixture;

TEST_CASE("ibv_devinfo: pair-b, Thunderbolt transport, every port PORT_DOWN") {
  auto r = parse_ibv_devinfo(fixture("macos/pair-b.ibv_devinfo.txt"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 3);
  const char* names[] = {"rdma_en1", "rdma_en6", "rdma_en2"};  // output order
  for (std::size_t i = 0; i < 3; ++i) {
    const RdmaDevice& d = (*r)[i];
    CHECK(d.name == names[i]);
    CHECK(d.transport == "Thunderbolt (100)");
    REQUIRE(d.ports.size() == 1);
    CHECK(d.ports[0].port == 1);
    CHECK(d.ports[0].state == "PORT_DOWN");
    CHECK_FALSE(d.ports[0].active);
    CHECK(d.ports[0].active_mtu == 4096);
    CHECK(d.ports[0].link_layer == "Thunderbolt");
    CHECK(d.ports[0].gids.empty());
  }
  CHECK((*r)[1].node_guid == "0000:0000:0000:0003");
}

TEST_CASE("ibv_devinfo -v: TN3205's GID table, with the IPv4-mapped GID[1]") {
  auto r = parse_ibv_devinfo(fixture("macos/ibv_devinfo-v-gid-table.txt"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);
  const RdmaDevice& d = (*r)[0];
  CHECK(d.name == "rdma_en2");
  CHECK(d.transport == "Thunderbolt (100)");
  CHECK(d.node_guid == "9093:3a23:2588:ac05");
  REQUIRE(d.ports.size() == 1);
  CHECK(d.ports[0].state == "PORT_ACTIVE");
  CHECK(d.ports[0].active);
  REQUIRE(d.ports[0].gids.size() == 3);
  CHECK(d.ports[0].gids[0].index == 0);
  CHECK(d.ports[0].gids[0].gid == "fe80::344d:4ff:feea:4e40");
  CHECK(d.ports[0].gids[1].index == 1);
  CHECK(d.ports[0].gids[1].gid == "::ffff:169.254.205.255");
  CHECK(d.ports[0].gids[2].gid == "fe80::1021:1bac:fe1:b5e3");
}

TEST_CASE("ibv_devinfo: ConnectX on Linux, RoCE GID types, GID[10]") {
  auto r = parse_ibv_devinfo(fixture("linux/ibv_devinfo-connectx.txt"));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].name == "mlx5_1");
  CHECK((*r)[0].transport == "InfiniBand (0)");
  CHECK((*r)[0].ports[0].active);
  CHECK((*r)[0].ports[0].link_layer == "InfiniBand");
  CHECK((*r)[1].ports[0].state == "PORT_DOWN");
  CHECK((*r)[1].ports[0].active_mtu == 1024);
  CHECK((*r)[1].ports[0].link_layer == "Ethernet");

  auto roce = parse_ibv_devinfo(
      "hca_id:\trxe_0\n\ttransport:\t\t\tInfiniBand (0)\n\t\tport:\t1\n"
      "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
      "\t\t\tGID[  0]:\t\tfe80::4c8a:5dff:fe11:2233, RoCE v2\n"
      "\t\t\tGID[ 10]:\t\t::ffff:10.0.12.1, RoCE v2\n");
  REQUIRE(roce.ok());
  const auto& gids = (*roce)[0].ports[0].gids;
  REQUIRE(gids.size() == 2);
  CHECK(gids[0].gid == "fe80::4c8a:5dff:fe11:2233");
  CHECK(gids[1].index == 10);
  CHECK(gids[1].gid == "::ffff:10.0.12.1");
}

TEST_CASE("ibv_devinfo: no devices, and bad outputs as errors naming the command") {
  auto none = parse_ibv_devinfo("No IB devices found\n");
  REQUIRE(none.ok());
  CHECK(none->empty());
  for (const std::string text :
       {"", "\n", "garbage\n", "port: 1\n", "hca_id: x\n port: one\n",
        "hca_id:", "hca_id: x\n port: 1\n GID[ z]: fe80::1\n", "hca_id: x\n GID[0]: fe80::1\n",
        "hca_id: x\n port: 1\n GID[0]:"}) {
    CAPTURE(text);
    auto r = parse_ibv_devinfo(text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.find("`ibv_devinfo -v` output: ") == 0);
  }
}
