#include "comm/transport/verbs/ibverbs_api.h"

#include <dlfcn.h>

#include <cstring>
#include <map>
#include <mutex>

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

struct Loaded {
  IbvApi api{};
  bool ok = false;
  std::string why;
};

}  // namespace

const char* ibverbs_library_name() {
#ifdef __APPLE__
  return "librdma.dylib";
#else
  return "libibverbs.so.1";
#endif
}

const IbvApi* load_ibverbs(std::string& why, const char* library) {
  static std::mutex mu;
  static std::map<std::string, Loaded> cache;
  const std::string name = library != nullptr ? library : ibverbs_library_name();
  std::lock_guard lock(mu);
  auto [it, fresh] = cache.try_emplace(name);
  Loaded& l = it->second;
  if (fresh) {
    void* lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = ::dlerror();
      l.why = "cannot load " + name + " (" + (e != nullptr ? e : "unknown error") + ")";
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
      if (!l.ok) l.why = name + " is not a usable verbs library: " + miss;
      // Optional: without a completion channel, waiting falls back to short naps.
      std::string none;
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
