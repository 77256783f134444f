#include "comm/transport/verbs/ibverbs_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace cc::comm::verbs {
namespace {

template <class F>
bool resolve(void* lib, const char* name, F& fn, std::string& why) {
  void* p = ::dlsym(lib, name);
  if (p == nullptr) {
    why = std::string("it has no symbol ") + name;
    return false;
  }
  static_assert(sizeof(F) == sizeof(void*));
  std::memcpy(&fn, &p, sizeof(p));  // POSIX: a data pointer from dlsym holds a function
  return true;
}

// The data path through the context's op table, as rdma-core's static inlines do. Templates,
// so that a verbs.h whose ibv_context_ops lacks these members still compiles (then only the
// library's exports can serve).
template <class Ops>
constexpr bool kOpsHaveDataPath = requires(Ops& o) {
  o.post_send;
  o.post_recv;
  o.poll_cq;
  o.req_notify_cq;
};

template <class Qp, class Wr>
int ops_post_send(Qp* qp, Wr* wr, Wr** bad) {
  return qp->context->ops.post_send(qp, wr, bad);
}
template <class Qp, class Wr>
int ops_post_recv(Qp* qp, Wr* wr, Wr** bad) {
  return qp->context->ops.post_recv(qp, wr, bad);
}
template <class Cq, class Wc>
int ops_poll_cq(Cq* cq, int n, Wc* wc) {
  return cq->context->ops.poll_cq(cq, n, wc);
}
template <class Cq>
int ops_req_notify_cq(Cq* cq, int solicited_only) {
  return cq->context->ops.req_notify_cq(cq, solicited_only);
}

template <class Ops>
bool use_context_ops(IbvApi& a) {
  if constexpr (kOpsHaveDataPath<Ops>) {
    a.post_send = &ops_post_send<ibv_qp, ibv_send_wr>;
    a.post_recv = &ops_post_recv<ibv_qp, ibv_recv_wr>;
    a.poll_cq = &ops_poll_cq<ibv_cq, ibv_wc>;
    a.req_notify_cq = &ops_req_notify_cq<ibv_cq>;
    a.data_path = "context ops";
    return true;
  } else {
    return false;
  }
}

// The provider's ops for qp and cq when `api` holds the context-op wrappers (a template, as
// above, so that a verbs.h without those members compiles).
template <class Qp, class Cq>
DataPath direct_ops(const IbvApi& api, Qp* qp, Cq* cq) {
  DataPath d{api.post_send, api.post_recv, api.poll_cq};
  if constexpr (kOpsHaveDataPath<decltype(qp->context->ops)>) {
    if (qp != nullptr && qp->context != nullptr &&
        api.post_send == &ops_post_send<ibv_qp, ibv_send_wr> &&
        api.post_recv == &ops_post_recv<ibv_qp, ibv_recv_wr> && qp->context->ops.post_send &&
        qp->context->ops.post_recv) {
      d.post_send = qp->context->ops.post_send;
      d.post_recv = qp->context->ops.post_recv;
    }
    if (cq != nullptr && cq->context != nullptr && api.poll_cq == &ops_poll_cq<ibv_cq, ibv_wc> &&
        cq->context->ops.poll_cq) {
      d.poll_cq = cq->context->ops.poll_cq;
    }
  }
  return d;
}

struct Loaded {
  IbvApi api{};
  bool ok = false;
  std::string why;
};

}  // namespace

const char* ibverbs_library_name() {
#ifdef __APPLE__
  return "/usr/lib/librdma.dylib";
#else
  return "libibverbs.so.1";
#endif
}

std::vector<std::string> ibverbs_library_names() {
#ifdef __APPLE__
  return {ibverbs_library_name(), "librdma.dylib"};
#else
  return {ibverbs_library_name()};
#endif
}

void* open_verbs_library(const std::vector<std::string>& names, std::string& why) {
  std::string tried;
  for (const std::string& n : names) {
    void* lib = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) return lib;
    const char* e = ::dlerror();
    tried += (tried.empty() ? "cannot load " : ", nor ") + n + " (" +
             (e != nullptr ? e : "unknown error") + ")";
  }
  why = tried;
  return nullptr;
}

bool resolve_data_path(void* lib, IbvApi& a, std::string& why) {
  std::string none;
  IbvApi e{};
  if (resolve(lib, "ibv_post_send", e.post_send, none) &&
      resolve(lib, "ibv_post_recv", e.post_recv, none) &&
      resolve(lib, "ibv_poll_cq", e.poll_cq, none) &&
      resolve(lib, "ibv_req_notify_cq", e.req_notify_cq, none)) {
    a.post_send = e.post_send;
    a.post_recv = e.post_recv;
    a.poll_cq = e.poll_cq;
    a.req_notify_cq = e.req_notify_cq;
    a.data_path = "exports";
    return true;
  }
  if (use_context_ops<ibv_context_ops>(a)) return true;
  why = "it exports not all of ibv_post_send, ibv_post_recv, ibv_poll_cq and "
        "ibv_req_notify_cq, and this verbs.h has no context op table to reach them (" +
        none + ")";
  return false;
}

DataPath resolve_hot_path(const IbvApi& api, ibv_qp* qp, ibv_cq* cq) {
  return direct_ops(api, qp, cq);
}

namespace {
std::atomic<const IbvApi*> g_test_api{nullptr};
}  // namespace

void install_ibverbs_for_tests(const IbvApi* api) {
  g_test_api.store(api);
}

const IbvApi* load_ibverbs(std::string& why, const char* library) {
  if (library == nullptr) {
    if (const IbvApi* fake = g_test_api.load(); fake != nullptr) return fake;
  }
  static std::mutex mu;
  static std::map<std::string, Loaded> cache;
  const std::vector<std::string> names =
      library != nullptr ? std::vector<std::string>{library} : ibverbs_library_names();
  const std::string& name = names.front();
  std::lock_guard lock(mu);
  auto [it, fresh] = cache.try_emplace(name);
  Loaded& l = it->second;
  if (fresh) {
    void* lib = open_verbs_library(names, l.why);
    if (lib == nullptr) {
#ifdef __APPLE__
      l.why += ": RDMA over Thunderbolt needs macOS 26.2 or later (see clusterctl rdma status)";
#else
      l.why += ": install the verbs library (Debian: libibverbs1 and ibverbs-providers)";
#endif
    } else {
      IbvApi& a = l.api;
      std::string miss;
      l.ok = resolve(lib, "ibv_get_device_list", a.get_device_list, miss) &&
             resolve(lib, "ibv_free_device_list", a.free_device_list, miss) &&
             resolve(lib, "ibv_get_device_name", a.get_device_name, miss) &&
             resolve(lib, "ibv_open_device", a.open_device, miss) &&
             resolve(lib, "ibv_close_device", a.close_device, miss) &&
             resolve(lib, "ibv_query_port", a.query_port, miss) &&
             resolve(lib, "ibv_query_gid", a.query_gid, miss) &&
             resolve(lib, "ibv_alloc_pd", a.alloc_pd, miss) &&
             resolve(lib, "ibv_dealloc_pd", a.dealloc_pd, miss) &&
             resolve(lib, "ibv_reg_mr", a.reg_mr, miss) &&
             resolve(lib, "ibv_dereg_mr", a.dereg_mr, miss) &&
             resolve(lib, "ibv_create_cq", a.create_cq, miss) &&
             resolve(lib, "ibv_destroy_cq", a.destroy_cq, miss) &&
             resolve(lib, "ibv_create_qp", a.create_qp, miss) &&
             resolve(lib, "ibv_destroy_qp", a.destroy_qp, miss) &&
             resolve(lib, "ibv_modify_qp", a.modify_qp, miss) &&
             resolve(lib, "ibv_wc_status_str", a.wc_status_str, miss);
      if (l.ok) l.ok = resolve_data_path(lib, a, miss);
      if (!l.ok) l.why = name + " is not a usable verbs library: " + miss;
      // Optional: without a completion channel, waiting falls back to short naps.
      std::string none;
      if (!resolve(lib, "ibv_query_device", a.query_device, none)) a.query_device = nullptr;
      if (!resolve(lib, "_ibv_query_gid_ex", a.query_gid_ex, none)) a.query_gid_ex = nullptr;
      if (!(resolve(lib, "ibv_create_comp_channel", a.create_comp_channel, none) &&
            resolve(lib, "ibv_destroy_comp_channel", a.destroy_comp_channel, none) &&
            resolve(lib, "ibv_get_cq_event", a.get_cq_event, none) &&
            resolve(lib, "ibv_ack_cq_events", a.ack_cq_events, none))) {
        a.create_comp_channel = nullptr;
        a.destroy_comp_channel = nullptr;
        a.get_cq_event = nullptr;
        a.ack_cq_events = nullptr;
      }
    }
  }
  if (!l.ok) {
    why = l.why;
    return nullptr;
  }
  return &l.api;
}

}  // namespace cc::comm::verbs
