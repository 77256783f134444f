// The verbs library loader: names tried, and where the data path (ibv_post_send & co.) comes
// from, on a stand-in library that exports it and on a header whose op table carries it.
#include <dlfcn.h>

#include <doctest/doctest.h>

#include "comm/transport/verbs/ibverbs_api.h"

namespace cc::comm::verbs {
namespace {

TEST_CASE("ibverbs: the platform's library names, absolute first on macOS") {
#ifdef __APPLE__
  CHECK(ibverbs_library_names() ==
        std::vector<std::string>{"/usr/lib/librdma.dylib", "librdma.dylib"});
#else
  CHECK(ibverbs_library_names() == std::vector<std::string>{"libibverbs.so.1"});
#endif
  CHECK(ibverbs_library_names().front() == ibverbs_library_name());
}

TEST_CASE("ibverbs: every name tried is in the error, with why it did not load") {
  std::string why;
  CHECK(open_verbs_library({"/nonexistent/librdma.dylib", "librdma-not-here.dylib"}, why) ==
        nullptr);
  CHECK(why.rfind("cannot load /nonexistent/librdma.dylib (", 0) == 0);
  CHECK(why.find("), nor librdma-not-here.dylib (") != std::string::npos);
  // load_ibverbs adds what to do.
  CHECK(load_ibverbs(why, "/nonexistent/libibverbs.so.1") == nullptr);
  CHECK(why.rfind("cannot load /nonexistent/libibverbs.so.1 (", 0) == 0);
#ifdef __APPLE__
  CHECK(why.find(": RDMA over Thunderbolt needs macOS 26.2") != std::string::npos);
#else
  CHECK(why.find(": install the verbs library (Debian: libibverbs1") != std::string::npos);
#endif
}

TEST_CASE("ibverbs: a library that exports the data path is called directly") {
  std::string why;
  void* lib = open_verbs_library({CLUSTERCOMM_FAKE_VERBS_EXPORTS}, why);
  REQUIRE_MESSAGE(lib != nullptr, why);
  IbvApi api{};
  REQUIRE(resolve_data_path(lib, api, why));
  CHECK(std::string(api.data_path) == "exports");
  CHECK(api.post_send(nullptr, nullptr, nullptr) == 101);
  CHECK(api.post_recv(nullptr, nullptr, nullptr) == 102);
  CHECK(api.poll_cq(nullptr, 7, nullptr) == 1007);
  CHECK(api.req_notify_cq(nullptr, 1) == 105);
  // The hot path keeps the exports: there is no op table to go around.
  const DataPath hot = resolve_hot_path(api, nullptr, nullptr);
  CHECK((hot.post_send == api.post_send));
  CHECK((hot.post_recv == api.post_recv));
  CHECK((hot.poll_cq == api.poll_cq));
}

// Records what the op table was called with.
struct OpsSeen {
  ibv_qp* qp = nullptr;
  ibv_cq* cq = nullptr;
  int calls = 0;
  int entries = -1;
  int solicited = -1;
};
OpsSeen seen;

TEST_CASE("ibverbs: without exports, the data path goes through the context's op table") {
  // This test binary exports no ibv_post_send (rdma-core's verbs.h makes it inline).
  void* self = ::dlopen(nullptr, RTLD_NOW);
  REQUIRE(self != nullptr);
  IbvApi api{};
  std::string why;
  REQUIRE_MESSAGE(resolve_data_path(self, api, why), why);
  CHECK(std::string(api.data_path) == "context ops");

  ibv_context ctx{};
  ctx.ops.post_send = [](ibv_qp* qp, ibv_send_wr*, ibv_send_wr**) {
    seen.qp = qp;
    ++seen.calls;
    return 11;
  };
  ctx.ops.post_recv = [](ibv_qp* qp, ibv_recv_wr*, ibv_recv_wr**) {
    seen.qp = qp;
    ++seen.calls;
    return 12;
  };
  ctx.ops.poll_cq = [](ibv_cq* cq, int n, ibv_wc*) {
    seen.cq = cq;
    seen.entries = n;
    ++seen.calls;
    return 3;
  };
  ctx.ops.req_notify_cq = [](ibv_cq* cq, int solicited_only) {
    seen.cq = cq;
    seen.solicited = solicited_only;
    ++seen.calls;
    return 14;
  };
  ibv_qp qp{};
  qp.context = &ctx;
  ibv_cq cq{};
  cq.context = &ctx;
  ibv_send_wr swr{};
  ibv_recv_wr rwr{};
  ibv_send_wr* sbad = nullptr;
  ibv_recv_wr* rbad = nullptr;
  ibv_wc wc[4]{};
  CHECK(api.post_send(&qp, &swr, &sbad) == 11);
  CHECK(seen.qp == &qp);
  CHECK(api.post_recv(&qp, &rwr, &rbad) == 12);
  CHECK(api.poll_cq(&cq, 4, wc) == 3);
  CHECK(seen.cq == &cq);
  CHECK(seen.entries == 4);
  CHECK(api.req_notify_cq(&cq, 0) == 14);
  CHECK(seen.solicited == 0);
  CHECK(seen.calls == 4);

  // The hot path calls the op table's functions themselves, read once from the objects.
  const DataPath hot = resolve_hot_path(api, &qp, &cq);
  CHECK((hot.post_send == ctx.ops.post_send));
  CHECK((hot.post_recv == ctx.ops.post_recv));
  CHECK((hot.poll_cq == ctx.ops.poll_cq));
  CHECK((hot.post_send != api.post_send));
  CHECK(hot.post_send(&qp, &swr, &sbad) == 11);
  CHECK(hot.poll_cq(&cq, 2, wc) == 3);
  CHECK(seen.entries == 2);
  // Without the objects' context (not built yet), the wrappers stay.
  ibv_qp bare{};
  const DataPath wrappers = resolve_hot_path(api, &bare, nullptr);
  CHECK((wrappers.post_send == api.post_send));
  CHECK((wrappers.poll_cq == api.poll_cq));
}

TEST_CASE("ibverbs: this host's verbs library, where there is one, has a data path") {
  std::string why;
  const IbvApi* api = load_ibverbs(why);
  if (api == nullptr) {
    MESSAGE("no verbs library here: " << why);
    return;
  }
  CHECK((api->post_send != nullptr && api->post_recv != nullptr && api->poll_cq != nullptr &&
         api->req_notify_cq != nullptr));
#ifdef __linux__
  CHECK(std::string(api->data_path) == "context ops");  // rdma-core exports none of them
#endif
}

}  // namespace
}  // namespace cc::comm::verbs
