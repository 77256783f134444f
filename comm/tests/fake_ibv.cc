#include "comm/tests/fake_ibv.h"

#include <cerrno>
#include <cstring>
#include <mutex>

namespace cc::comm::test {
namespace {

struct State {
  std::mutex mu;
  std::vector<FakeIbvDevice> devices;
  std::vector<IbvFault> faults;
  std::vector<ibv_device*> list;  // one per device, handed out by get_device_list
  uint32_t next_qpn = 100;
};

State& state() {
  static State s;
  return s;
}

// Every object the fake hands out remembers its device's name (index into devices).
struct FakeContext {
  ibv_context ctx{};
  size_t dev = 0;
};
FakeContext* of(ibv_context* c) {
  return reinterpret_cast<FakeContext*>(c);
}

// Fails (returns true, errno set) when a fault for `call` on device `dev` is installed.
bool faulty(IbvCall call, size_t dev) {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (const IbvFault& f : s.faults) {
    if (f.call == call && f.device == s.devices[dev].name) {
      errno = f.err;
      return true;
    }
  }
  return false;
}
int fault_code(IbvCall call, size_t dev) {
  return faulty(call, dev) ? errno : 0;
}

ibv_device** get_device_list(int* n) {
  State& s = state();
  std::lock_guard lock(s.mu);
  auto** out = new ibv_device*[s.list.size() + 1];
  for (size_t i = 0; i < s.list.size(); ++i) out[i] = s.list[i];
  out[s.list.size()] = nullptr;
  *n = static_cast<int>(s.list.size());
  return out;
}
void free_device_list(ibv_device** l) {
  delete[] l;
}
const char* get_device_name(ibv_device* d) {
  return d->name;
}

size_t index_of(ibv_device* d) {
  State& s = state();
  std::lock_guard lock(s.mu);
  for (size_t i = 0; i < s.list.size(); ++i) {
    if (s.list[i] == d) return i;
  }
  return 0;
}

ibv_context* open_device(ibv_device* d) {
  const size_t i = index_of(d);
  if (faulty(IbvCall::kOpenDevice, i)) return nullptr;
  auto* c = new FakeContext;
  c->ctx.device = d;
  c->dev = i;
  return &c->ctx;
}
int close_device(ibv_context* c) {
  delete of(c);
  return 0;
}
int query_port(ibv_context* c, uint8_t, ibv_port_attr* a) {
  if (const int e = fault_code(IbvCall::kQueryPort, of(c)->dev)) return e;
  State& s = state();
  std::lock_guard lock(s.mu);
  std::memset(a, 0, sizeof *a);
  a->state = s.devices[of(c)->dev].state;
  a->active_mtu = IBV_MTU_1024;
  a->gid_tbl_len = 4;
  return 0;
}
int query_gid(ibv_context* c, uint8_t, int index, ibv_gid* g) {
  State& s = state();
  std::lock_guard lock(s.mu);
  std::memset(g, 0, sizeof *g);
  if (index == 1 && s.devices[of(c)->dev].ipv4_gid) {
    g->raw[10] = g->raw[11] = 0xff;
    g->raw[12] = 10;
    g->raw[15] = static_cast<uint8_t>(1 + of(c)->dev);
  }
  return 0;
}
ibv_pd* alloc_pd(ibv_context* c) {
  if (faulty(IbvCall::kAllocPd, of(c)->dev)) return nullptr;
  auto* pd = new ibv_pd{};
  pd->context = c;
  return pd;
}
int dealloc_pd(ibv_pd* pd) {
  delete pd;
  return 0;
}
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, int) {
  if (faulty(IbvCall::kRegMr, of(pd->context)->dev)) return nullptr;
  auto* mr = new ibv_mr{};
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  mr->lkey = mr->rkey = 7;
  return mr;
}
int dereg_mr(ibv_mr* mr) {
  delete mr;
  return 0;
}
ibv_cq* create_cq(ibv_context* c, int cqe, void*, ibv_comp_channel*, int) {
  if (faulty(IbvCall::kCreateCq, of(c)->dev)) return nullptr;
  auto* cq = new ibv_cq{};
  cq->context = c;
  cq->cqe = cqe;
  return cq;
}
int destroy_cq(ibv_cq* cq) {
  delete cq;
  return 0;
}
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (faulty(IbvCall::kCreateQp, of(pd->context)->dev)) return nullptr;
  auto* qp = new ibv_qp{};
  qp->context = pd->context;
  qp->pd = pd;
  qp->send_cq = init->send_cq;
  qp->recv_cq = init->recv_cq;
  qp->qp_type = init->qp_type;
  State& s = state();
  std::lock_guard lock(s.mu);
  qp->qp_num = s.next_qpn++;
  return qp;
}
int destroy_qp(ibv_qp* qp) {
  delete qp;
  return 0;
}
int modify_qp(ibv_qp* qp, ibv_qp_attr* a, int) {
  const IbvCall call = a->qp_state == IBV_QPS_INIT  ? IbvCall::kModifyQpInit
                       : a->qp_state == IBV_QPS_RTR ? IbvCall::kModifyQpRtr
                                                    : IbvCall::kModifyQpRts;
  return fault_code(call, of(qp->context)->dev);
}
const char* wc_status_str(ibv_wc_status) {
  return "fake status";
}
int post_send(ibv_qp*, ibv_send_wr*, ibv_send_wr**) {
  return 0;
}
int post_recv(ibv_qp* qp, ibv_recv_wr*, ibv_recv_wr** bad) {
  if (const int e = fault_code(IbvCall::kPostRecv, of(qp->context)->dev)) {
    *bad = nullptr;
    return e;
  }
  return 0;
}
int poll_cq(ibv_cq*, int, ibv_wc*) {
  return 0;
}
int req_notify_cq(ibv_cq*, int) {
  return 0;
}

const verbs::IbvApi& api() {
  static const verbs::IbvApi a = [] {
    verbs::IbvApi x{};
    x.get_device_list = get_device_list;
    x.free_device_list = free_device_list;
    x.get_device_name = get_device_name;
    x.open_device = open_device;
    x.close_device = close_device;
    x.query_port = query_port;
    x.query_gid = query_gid;
    x.alloc_pd = alloc_pd;
    x.dealloc_pd = dealloc_pd;
    x.reg_mr = reg_mr;
    x.dereg_mr = dereg_mr;
    x.create_cq = create_cq;
    x.destroy_cq = destroy_cq;
    x.create_qp = create_qp;
    x.destroy_qp = destroy_qp;
    x.modify_qp = modify_qp;
    x.wc_status_str = wc_status_str;
    // No query_device (no zero-copy) and no completion channel (waits nap): optional.
    x.post_send = post_send;
    x.post_recv = post_recv;
    x.poll_cq = poll_cq;
    x.req_notify_cq = req_notify_cq;
    x.data_path = "exports";
    return x;
  }();
  return a;
}

}  // namespace

void fake_ibv_install(std::vector<FakeIbvDevice> devices, std::vector<IbvFault> faults) {
  State& s = state();
  {
    std::lock_guard lock(s.mu);
    for (ibv_device* d : s.list) delete d;
    s.list.clear();
    s.devices = std::move(devices);
    s.faults = std::move(faults);
    for (const FakeIbvDevice& d : s.devices) {
      auto* dev = new ibv_device{};
      std::strncpy(dev->name, d.name.c_str(), sizeof dev->name - 1);
      s.list.push_back(dev);
    }
  }
  verbs::install_ibverbs_for_tests(&api());
}

void fake_ibv_uninstall() {
  verbs::install_ibverbs_for_tests(nullptr);
  State& s = state();
  std::lock_guard lock(s.mu);
  for (ibv_device* d : s.list) delete d;
  s.list.clear();
}

}  // namespace cc::comm::test
