// verbs_probe: the Soft-RoCE harness's own check that a host-built verbs program works in the
// guest, on the devices the harness says. For each cable of the mesh (RDMA_VM_MESH_FILE), it
// takes the two devices from the MLX device matrix (RDMA_VM_DEVICES_FILE: cell [i][j], k-th
// entry for the k-th cable), opens them, checks that port 1 is ACTIVE and that GID index 1 is
// ::ffff:<that end's IPv4>, then connects one UC queue pair per end (the Apple profile: UC,
// two-sided SEND/RECV only, a receive always posted before the peer's send) and ping-pongs
// messages of 8 B, 4 KiB and 1 MiB, checking every byte and every completion's status.
// Both ends live in this one process: it proves the devices, not a transport.
//
//   verbs_probe [--devices FILE] [--mesh FILE] [--cable C]... [--timeout-ms MS]
//
// Exit status 0 when every cable passed, 1 on the first failure (named: cable, host, device),
// 2 on a usage or input error. Every wait for a completion has a timeout (default 10000 ms).
#include <infiniband/verbs.h>

#include <arpa/inet.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// RAII owners, one per verbs object; released in reverse order of creation (members below).
struct CloseDevice {
  void operator()(ibv_context* c) const { ibv_close_device(c); }
};
struct DeallocPd {
  void operator()(ibv_pd* p) const { ibv_dealloc_pd(p); }
};
struct DestroyCq {
  void operator()(ibv_cq* c) const { ibv_destroy_cq(c); }
};
struct DeregMr {
  void operator()(ibv_mr* m) const { ibv_dereg_mr(m); }
};
struct DestroyQp {
  void operator()(ibv_qp* q) const { ibv_destroy_qp(q); }
};
struct FreeDeviceList {
  void operator()(ibv_device** l) const { ibv_free_device_list(l); }
};

constexpr std::size_t kMaxMessage = std::size_t{1} << 20;
constexpr uint8_t kPort = 1;
constexpr int kGidIndex = 1;  // the IPv4-mapped GID on rxe and on Apple's rdma_enX
// wr_id layout: the low 32 bits are the message number; bit 32 marks a receive.
constexpr uint64_t kRecvBit = uint64_t{1} << 32;

std::string gid_text(const ibv_gid& gid) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(AF_INET6, gid.raw, text, sizeof text);
  return text;
}

// The bytes a side sends: a fixed pseudo-random pattern per side, with the message number in
// the first 4 bytes (so a stale or misplaced message is caught). Filled and checked with
// memcpy/memcmp: byte loops cost seconds per MiB under emulation and sanitizers.
const std::vector<uint8_t>& side_pattern(int side) {
  static const auto make = [](int s) {
    std::vector<uint8_t> p(kMaxMessage);
    uint32_t x = 2463534242u + static_cast<uint32_t>(s);
    for (auto& b : p) {
      x ^= x << 13;
      x ^= x >> 17;
      x ^= x << 5;
      b = static_cast<uint8_t>(x);
    }
    return p;
  };
  static const std::vector<uint8_t> patterns[2] = {make(0), make(1)};
  return patterns[side];
}

void fill(uint8_t* out, std::size_t size, uint32_t message, int side) {
  std::memcpy(out, side_pattern(side).data(), size);
  std::memcpy(out, &message, size < sizeof message ? size : sizeof message);
}

// One end of a cable: a device opened with a PD, two CQs, one MR (send half, receive half)
// and one UC QP.
struct End {
  int host = 0;
  int side = 0;  // 0 or 1: which end of the cable, for the data pattern
  std::string device;
  std::string address;
  std::vector<uint8_t> buffer = std::vector<uint8_t>(2 * kMaxMessage);
  std::unique_ptr<ibv_context, CloseDevice> context;
  std::unique_ptr<ibv_pd, DeallocPd> pd;
  std::unique_ptr<ibv_cq, DestroyCq> send_cq;
  std::unique_ptr<ibv_cq, DestroyCq> recv_cq;
  std::unique_ptr<ibv_mr, DeregMr> mr;
  std::unique_ptr<ibv_qp, DestroyQp> qp;
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
  uint32_t psn = 0;

  std::string name() const { return "host " + std::to_string(host) + " " + device; }
  uint8_t* send_area() { return buffer.data(); }
  uint8_t* recv_area() { return buffer.data() + kMaxMessage; }

  void open() {
    int count = 0;
    std::unique_ptr<ibv_device*, FreeDeviceList> list(ibv_get_device_list(&count));
    if (!list) throw Failure(name() + ": ibv_get_device_list failed: " + std::strerror(errno));
    for (int i = 0; i < count; ++i) {
      if (device == ibv_get_device_name(list.get()[i])) context.reset(ibv_open_device(list.get()[i]));
    }
    if (!context) throw Failure(name() + ": no such RDMA device, or ibv_open_device failed (ibv_devices lists them)");
    ibv_port_attr port{};
    if (ibv_query_port(context.get(), kPort, &port) != 0) throw Failure(name() + ": ibv_query_port failed");
    if (port.state != IBV_PORT_ACTIVE) {
      throw Failure(name() + ": port 1 is " + ibv_port_state_str(port.state) + ", not ACTIVE");
    }
    mtu = port.active_mtu;
    if (ibv_query_gid(context.get(), kPort, kGidIndex, &gid) != 0) {
      throw Failure(name() + ": ibv_query_gid(port 1, index 1) failed");
    }
    const std::string want = "::ffff:" + address;
    if (gid_text(gid) != want) {
      throw Failure(name() + ": GID index 1 is " + gid_text(gid) + ", expected " + want +
                    " (the IPv4-mapped GID of its address)");
    }
    pd.reset(ibv_alloc_pd(context.get()));
    send_cq.reset(ibv_create_cq(context.get(), 16, nullptr, nullptr, 0));
    recv_cq.reset(ibv_create_cq(context.get(), 16, nullptr, nullptr, 0));
    if (!pd || !send_cq || !recv_cq) throw Failure(name() + ": cannot allocate a PD or CQs");
    // (ibv_reg_mr): the function, not verbs.h's macro of the same name (it mixes two enum types).
    mr.reset((ibv_reg_mr)(pd.get(), buffer.data(), buffer.size(), IBV_ACCESS_LOCAL_WRITE));
    if (!mr) throw Failure(name() + ": ibv_reg_mr of " + std::to_string(buffer.size()) + " B failed: " + std::strerror(errno));
    ibv_qp_init_attr init{};
    init.send_cq = send_cq.get();
    init.recv_cq = recv_cq.get();
    init.qp_type = IBV_QPT_UC;
    init.cap.max_send_wr = 4;
    init.cap.max_recv_wr = 4;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    qp.reset(ibv_create_qp(pd.get(), &init));
    if (!qp) throw Failure(name() + ": ibv_create_qp(UC) failed: " + std::strerror(errno));
    psn = static_cast<uint32_t>(host * 1000 + side * 100 + 1) & 0xffffff;
  }

  // RESET -> INIT -> RTR -> RTS, with explicit attribute masks (UC: no timeouts, no atomics).
  void connect(const End& peer) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = kPort;
    attr.qp_access_flags = 0;  // SEND/RECV only: no remote access
    modify(attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = mtu < peer.mtu ? mtu : peer.mtu;
    attr.dest_qp_num = peer.qp->qp_num;
    attr.rq_psn = peer.psn;
    attr.ah_attr.is_global = 1;
    attr.ah_attr.grh.dgid = peer.gid;
    attr.ah_attr.grh.sgid_index = kGidIndex;
    attr.ah_attr.grh.hop_limit = 1;
    attr.ah_attr.port_num = kPort;
    modify(attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN, "RTR");
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = psn;
    modify(attr, IBV_QP_STATE | IBV_QP_SQ_PSN, "RTS");
  }

  void modify(ibv_qp_attr& attr, int mask, const char* state) {
    if (int rc = ibv_modify_qp(qp.get(), &attr, mask); rc != 0) {
      throw Failure(name() + ": ibv_modify_qp to " + state + " failed: " + std::strerror(rc));
    }
  }

  void post_recv(uint32_t message, std::size_t size) {
    ibv_sge sge{reinterpret_cast<uintptr_t>(recv_area()), static_cast<uint32_t>(size), mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = kRecvBit | message;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (int rc = ibv_post_recv(qp.get(), &wr, &bad); rc != 0) {
      throw Failure(name() + ": ibv_post_recv failed: " + std::strerror(rc));
    }
  }

  void post_send(uint32_t message, std::size_t size) {
    fill(send_area(), size, message, side);
    ibv_sge sge{reinterpret_cast<uintptr_t>(send_area()), static_cast<uint32_t>(size), mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = message;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    if (int rc = ibv_post_send(qp.get(), &wr, &bad); rc != 0) {
      throw Failure(name() + ": ibv_post_send failed: " + std::strerror(rc));
    }
  }

  // Waits for the completion of wr_id on cq, checking its status and length.
  void wait(ibv_cq* cq, uint64_t wr_id, std::size_t size, std::chrono::milliseconds timeout,
            const std::string& what) {
    const auto deadline = Clock::now() + timeout;
    ibv_wc wc{};
    int n = 0;
    while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
      if (Clock::now() > deadline) {
        throw Failure(name() + ": no completion for " + what + " within " +
                      std::to_string(timeout.count()) +
                      " ms (UC drops a SEND that finds no posted receive, silently)");
      }
    }
    if (n < 0) throw Failure(name() + ": ibv_poll_cq failed while waiting for " + what);
    if (wc.status != IBV_WC_SUCCESS) {
      throw Failure(name() + ": " + what + " completed with status " + ibv_wc_status_str(wc.status));
    }
    if (wc.wr_id != wr_id) {
      throw Failure(name() + ": " + what + ": completion for wr_id " + std::to_string(wc.wr_id) +
                    ", expected " + std::to_string(wr_id));
    }
    if ((wr_id & kRecvBit) != 0 && wc.byte_len != size) {
      throw Failure(name() + ": " + what + ": received " + std::to_string(wc.byte_len) + " B, expected " +
                    std::to_string(size));
    }
  }

  void check_received(uint32_t message, std::size_t size, int from_side, const std::string& from) const {
    std::vector<uint8_t> want(size);
    fill(want.data(), size, message, from_side);
    const uint8_t* data = buffer.data() + kMaxMessage;
    if (std::memcmp(data, want.data(), size) != 0) {
      std::size_t i = 0;
      while (data[i] == want[i]) ++i;
      throw Failure(name() + ": message " + std::to_string(message) + " from " + from + ": byte " +
                    std::to_string(i) + " of " + std::to_string(size) + " is wrong");
    }
  }
};

// size bytes from a to b and back, rounds times; returns the mean round trip in microseconds.
double ping_pong(End& a, End& b, std::size_t size, int rounds, std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    const auto m = static_cast<uint32_t>(r);
    const std::string what = std::to_string(size) + " B message " + std::to_string(m);
    b.post_recv(m, size);  // receives first: on UC a SEND without one is lost
    a.post_recv(m, size);
    a.post_send(m, size);
    b.wait(b.recv_cq.get(), kRecvBit | m, size, timeout, "RECV of " + what + " from " + a.name());
    b.check_received(m, size, a.side, a.name());
    b.post_send(m, size);
    a.wait(a.send_cq.get(), m, size, timeout, "SEND of " + what);
    a.wait(a.recv_cq.get(), kRecvBit | m, size, timeout, "RECV of the reply to " + what + " from " + b.name());
    a.check_received(m, size, b.side, b.name());
    b.wait(b.send_cq.get(), m, size, timeout, "SEND of the reply to " + what);
  }
  const std::chrono::duration<double, std::micro> took = Clock::now() - start;
  return took.count() / rounds;
}

Json read_json(const std::string& path, const char* what) {
  std::ifstream in(path);
  if (!in) throw UsageError("cannot read the " + std::string(what) + " " + path);
  try {
    return Json::parse(in);
  } catch (const Json::exception& e) {
    throw UsageError(path + ": not valid JSON: " + e.what());
  }
}

// The device of host i for its k-th cable to host j, from the MLX matrix.
std::string matrix_device(const Json& matrix, const std::string& path, int i, int j, int k, int cables) {
  const auto bad = [&](const std::string& why) {
    return UsageError(path + ": cell [" + std::to_string(i) + "][" + std::to_string(j) + "] " + why);
  };
  if (!matrix.is_array() || static_cast<int>(matrix.size()) <= i || !matrix[static_cast<std::size_t>(i)].is_array() ||
      static_cast<int>(matrix[static_cast<std::size_t>(i)].size()) <= j) {
    throw bad("is missing");
  }
  if (!matrix[static_cast<std::size_t>(i)][static_cast<std::size_t>(i)].is_null()) {
    throw UsageError(path + ": diagonal cell [" + std::to_string(i) + "][" + std::to_string(i) + "] is not null");
  }
  const Json& cell = matrix[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  if (cables == 1 && cell.is_string()) return cell.get<std::string>();
  if (cell.is_array() && static_cast<int>(cell.size()) == cables && cell[static_cast<std::size_t>(k)].is_string()) {
    return cell[static_cast<std::size_t>(k)].get<std::string>();
  }
  throw bad("is not a device name or a list of " + std::to_string(cables) + " device names: " + cell.dump());
}

int run(int argc, char** argv) {
  std::string devices_path = std::getenv("RDMA_VM_DEVICES_FILE") ? std::getenv("RDMA_VM_DEVICES_FILE") : "";
  std::string mesh_path = std::getenv("RDMA_VM_MESH_FILE") ? std::getenv("RDMA_VM_MESH_FILE") : "";
  std::vector<int> only;
  auto timeout = std::chrono::milliseconds(10000);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) throw UsageError("unknown argument or missing value: " + arg);
    const std::string value = argv[++i];
    if (arg == "--devices") devices_path = value;
    else if (arg == "--mesh") mesh_path = value;
    else if (arg == "--cable") only.push_back(std::stoi(value));
    else if (arg == "--timeout-ms") timeout = std::chrono::milliseconds(std::stoi(value));
    else throw UsageError("unknown argument " + arg);
  }
  if (devices_path.empty() || mesh_path.empty()) {
    throw UsageError("give --devices and --mesh (or run under tests/rdma-vm/run, which sets RDMA_VM_DEVICES_FILE and RDMA_VM_MESH_FILE)");
  }
  const Json matrix = read_json(devices_path, "device matrix");
  const Json mesh = read_json(mesh_path, "mesh file");
  const int cables_per_pair = mesh.at("cables_per_pair").get<int>();
  int checked = 0;
  for (const Json& cable : mesh.at("cables")) {
    const int c = cable.at("cable").get<int>();
    if (!only.empty() && std::find(only.begin(), only.end(), c) == only.end()) continue;
    End a, b;
    a.host = cable.at("hosts").at(0).get<int>();
    b.host = cable.at("hosts").at(1).get<int>();
    b.side = 1;
    const int k = cable.at("index").get<int>();
    a.device = matrix_device(matrix, devices_path, a.host, b.host, k, cables_per_pair);
    b.device = matrix_device(matrix, devices_path, b.host, a.host, k, cables_per_pair);
    for (End* e : {&a, &b}) {
      const std::string listed = cable.at("devices").at(static_cast<std::size_t>(e->side)).get<std::string>();
      if (listed != e->device) {
        throw Failure("cable " + std::to_string(c) + ": the matrix names " + e->device + " for host " +
                      std::to_string(e->host) + ", the mesh file " + listed);
      }
      e->address = cable.at("addresses").at(static_cast<std::size_t>(e->side)).get<std::string>();
    }
    try {
      a.open();
      b.open();
      a.connect(b);
      b.connect(a);
      ping_pong(a, b, 8, 1, timeout);  // warm-up: the first packets resolve the peer's MAC
      const double lat = ping_pong(a, b, 8, 50, timeout);
      const double mid = ping_pong(a, b, 4096, 10, timeout);
      const double big = ping_pong(a, b, kMaxMessage, 1, timeout);
      std::printf("cable %d: %s (%s) <-> %s (%s): ports ACTIVE, GID[1] IPv4-mapped; UC SEND/RECV round trips "
                  "8 B %.1f us, 4 KiB %.1f us, 1 MiB %.0f us (%.1f MB/s each way); all bytes checked\n",
                  c, a.name().c_str(), gid_text(a.gid).c_str(), b.name().c_str(), gid_text(b.gid).c_str(), lat,
                  mid, big, 2.0 * kMaxMessage / big);
    } catch (const Failure& e) {
      throw Failure("cable " + std::to_string(c) + ": " + e.what());
    }
    ++checked;
  }
  if (checked == 0) throw UsageError(mesh_path + ": no cable to check");
  std::printf("verbs_probe: %d cable(s) passed\n", checked);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "verbs_probe: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "verbs_probe: FAILED: %s\n", e.what());
    return 1;
  }
}
