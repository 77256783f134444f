// The verbs library, opened at run time with dlopen: a binary built with RDMA support still
// starts on a machine without it (and the communicator falls back to TCP, saying why).
//
// Compiled against libibverbs-dev's <infiniband/verbs.h> only; nothing links libibverbs.
// Library names: "libibverbs.so.1" on Linux (rdma-core), "/usr/lib/librdma.dylib" on macOS
// (Apple ships verbs as librdma.dylib with infiniband/verbs.h in the SDK:
// docs/platform.md#the-verbs-library-on-macos), opened by
// its absolute path first so that DYLD_* search paths cannot substitute another library, then
// by its leaf name.
//
// Which ibv_* are real exports (resolved here with dlsym) and which are not:
// - exports: ibv_get_device_list, ibv_free_device_list, ibv_get_device_name,
//   ibv_open_device, ibv_close_device, ibv_query_device, ibv_query_port (the compat entry
//   point; verbs.h wraps it in a macro that prefers the context's op), ibv_query_gid,
//   ibv_alloc_pd, ibv_dealloc_pd, ibv_reg_mr (a macro in verbs.h over the export of the same
//   name), ibv_dereg_mr, ibv_create_cq, ibv_destroy_cq, ibv_create_qp, ibv_destroy_qp,
//   ibv_modify_qp, ibv_wc_status_str; optional: ibv_query_device (for zero-copy's max_sge;
//   without it sends are copied), _ibv_query_gid_ex (rdma-core's export behind the inline
//   ibv_query_gid_ex: a GID's RoCE version; Apple's library has none), and (all four or none, else nullptr and waiting
//   naps instead of sleeping on the channel): the completion channel's
//   ibv_create_comp_channel, ibv_destroy_comp_channel, ibv_get_cq_event, ibv_ack_cq_events.
// - the data path: ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq. rdma-core's
//   verbs.h makes them static inlines through the context's op table
//   (qp->context->ops.post_send, ... cq->context->ops.req_notify_cq) and exports no symbol;
//   another platform's header may declare them extern instead. The code never calls the
//   header's versions (an extern one would need linking): IbvApi's four pointers are the
//   library's exports when it has all four, else wrappers that call through the context's
//   op table (compiled only where verbs.h's ibv_context_ops has those members).
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cc::comm::verbs {

/// rdma-core's struct ibv_gid_entry (verbs.h since rdma-core 32), spelled out because other
/// platforms' verbs.h lack it; gid_type is enum ibv_gid_type: 0 IB, 1 RoCE v1, 2 RoCE v2.
struct GidEntry {
  ibv_gid gid;
  uint32_t gid_index;
  uint32_t port_num;
  uint32_t gid_type;
  uint32_t ndev_ifindex;
};
inline constexpr int kGidTypeUnknown = -1;
inline constexpr int kGidTypeRoceV1 = 1;
inline constexpr int kGidTypeRoceV2 = 2;

struct IbvApi {
  ibv_device** (*get_device_list)(int* num_devices);
  void (*free_device_list)(ibv_device** list);
  const char* (*get_device_name)(ibv_device* device);
  ibv_context* (*open_device)(ibv_device* device);
  int (*close_device)(ibv_context* context);
  int (*query_port)(ibv_context* context, uint8_t port_num, ibv_port_attr* attr);
  int (*query_gid)(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid);
  ibv_pd* (*alloc_pd)(ibv_context* context);
  int (*dealloc_pd)(ibv_pd* pd);
  ibv_mr* (*reg_mr)(ibv_pd* pd, void* addr, size_t length, int access);
  int (*dereg_mr)(ibv_mr* mr);
  ibv_cq* (*create_cq)(ibv_context* context, int cqe, void* cq_context,
                       ibv_comp_channel* channel, int comp_vector);
  int (*destroy_cq)(ibv_cq* cq);
  ibv_qp* (*create_qp)(ibv_pd* pd, ibv_qp_init_attr* attr);
  int (*destroy_qp)(ibv_qp* qp);
  int (*modify_qp)(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
  const char* (*wc_status_str)(ibv_wc_status status);
  /// Optional (nullptr when the library lacks it): only zero-copy needs it (max_sge).
  int (*query_device)(ibv_context* context, ibv_device_attr* attr);
  /// Optional: rdma-core's _ibv_query_gid_ex (entry_size = sizeof(GidEntry)), for a GID's type
  /// (kGidTypeRoceV1 / kGidTypeRoceV2); without it every GID's type is unknown.
  int (*query_gid_ex)(ibv_context* context, uint32_t port_num, uint32_t gid_index, void* entry,
                      uint32_t flags, size_t entry_size);
  ibv_comp_channel* (*create_comp_channel)(ibv_context* context);
  int (*destroy_comp_channel)(ibv_comp_channel* channel);
  int (*get_cq_event)(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context);
  void (*ack_cq_events)(ibv_cq* cq, unsigned int nevents);
  // The data path (see above); never null once loaded. Return values as in verbs.h: 0 or an
  // errno value for the posts and req_notify_cq, the number of completions or < 0 for poll_cq.
  int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
  int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
  int (*poll_cq)(ibv_cq* cq, int num_entries, ibv_wc* wc);
  int (*req_notify_cq)(ibv_cq* cq, int solicited_only);
  /// Where the data path came from: "exports" or "context ops".
  const char* data_path;
};

/// The data path's three hot functions for one queue pair and its completion queue, resolved
/// once when the link is built: IbvApi's pointers, or, when those are the context-op wrappers
/// (rdma-core), the provider's ops themselves, read from the objects' context as verbs.h's
/// static inlines read them on every call (providers set their op table once, when the device
/// is opened). One indirect call fewer per post and per poll of the waiting loop: in the
/// emulated guest an indirect call is a slow path, and the loop polls on every turn.
struct DataPath {
  int (*post_send)(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
  int (*post_recv)(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
  int (*poll_cq)(ibv_cq* cq, int num_entries, ibv_wc* wc);
};
DataPath resolve_hot_path(const IbvApi& api, ibv_qp* qp, ibv_cq* cq);

/// The library name tried first on this platform ("libibverbs.so.1" or
/// "/usr/lib/librdma.dylib").
const char* ibverbs_library_name();

/// Every name tried, in order: on macOS the absolute path, then the leaf "librdma.dylib".
std::vector<std::string> ibverbs_library_names();

/// Loads the library once per process and resolves every entry point. Returns nullptr and
/// sets `why` (each name tried with its dlerror(), or the missing symbol) when that fails;
/// thread-safe. The library stays loaded until exit (providers register themselves with it).
/// `library` overrides the names (tests use a path that does not exist).
const IbvApi* load_ibverbs(std::string& why, const char* library = nullptr);

/// Makes load_ibverbs (without `library`) return `api` instead of the system's library, until
/// called again with nullptr: the tests' fake verbs (comm/tests/fake_ibv.h), which inject
/// failures into device opening, registration and queue-pair setup. Not for production use.
void install_ibverbs_for_tests(const IbvApi* api);

/// dlopen()s the first of `names` that loads (RTLD_NOW | RTLD_LOCAL). nullptr when none does,
/// `why` then naming each with its dlerror(): "cannot load A (...), nor B (...)".
void* open_verbs_library(const std::vector<std::string>& names, std::string& why);

/// Fills the data path of `api` (post_send, post_recv, poll_cq, req_notify_cq, data_path)
/// from `lib` (a dlopen handle): its exports when it has all four, else the context-op
/// wrappers. False, with `why` naming the missing symbols, when neither is possible.
/// load_ibverbs calls it; tests call it on other handles.
bool resolve_data_path(void* lib, IbvApi& api, std::string& why);

}  // namespace cc::comm::verbs
