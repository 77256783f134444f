// The verbs setup when the host's RDMA stack says no, on the fake verbs library (fake_ibv.h):
// a device the matrix names that this host lacks, a call that fails (ibv_open_device,
// ibv_alloc_pd, ibv_create_qp, ibv_modify_qp, ibv_reg_mr, ibv_post_recv with EINVAL, EBUSY or
// ENOMEM), a port that is down, a GID table with no usable entry. JACCL crashes on some of
// these (a null PD into ibv_reg_mr, a segfault in init: ml-explore/mlx#3777, #4485, PR #3802).
// Here each must be an Error on every rank, of the kind and with the message the case names
// (the rank, the device and port, and what to do), within the timeout: never a crash or hang.
#include <doctest/doctest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/clustercomm.h"
#include "comm/tests/fake_ibv.h"

namespace cc::comm::test {
namespace {

struct Outcome {
  ErrorKind kind = ErrorKind::kBroken;
  std::string message = "no error";
  long long ms = 0;
};

// Two ranks whose device matrix puts rank r on device "fake<r>" (rank 1's name replaced by
// `rank1_device`), with CLUSTERCOMM_TRANSPORT=verbs and a timeout of 3 s; returns how each
// rank's construction ended.
std::vector<Outcome> start_two(const std::string& rank1_device,
                               TransportKind transport = TransportKind::kVerbs) {
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::once_flag port_set;
  std::vector<Outcome> out(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      const auto started = std::chrono::steady_clock::now();
      Outcome& o = out[static_cast<size_t>(r)];
      try {
        Config c;
        c.rank = r;
        c.size = 2;
        c.token = "fake-verbs";
        c.timeout = std::chrono::milliseconds(3000);
        c.transport = transport;
        c.host_id = "fake-verbs-host-" + std::to_string(r);  // two hosts: no shared memory
        c.devices = r == 0 ? std::vector<std::vector<std::string>>{{}, {"fake0"}}
                           : std::vector<std::vector<std::string>>{{rank1_device}, {}};
        if (r == 0) {
          c.coordinator = "127.0.0.1:0";
          c.on_coordinator_listening = [&](int p) {
            std::call_once(port_set, [&] { port_promise.set_value(p); });
          };
        } else {
          c.coordinator = "127.0.0.1:" + std::to_string(port.get());
        }
        Communicator comm(c);
        o.message = "no error: " + comm.transport_name();
      } catch (const Error& e) {
        o.kind = e.kind();
        o.message = e.what();
        if (r == 0) std::call_once(port_set, [&] { port_promise.set_value(1); });
      }
      o.ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::steady_clock::now() - started)
                 .count();
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

struct Case {
  const char* name;
  std::vector<FakeIbvDevice> devices;
  std::vector<IbvFault> faults;
  std::string rank1_device;
  ErrorKind kind;
  std::vector<std::string> says;  // in every rank's message
};

TEST_CASE(
    "verbs setup faults on the fake verbs library: a clear error on every rank, within "
    "the timeout") {
  if (std::getenv("CLUSTERCOMM_TEST_IBV_DEVICES") != nullptr) return;  // the guest: real verbs
  const std::vector<FakeIbvDevice> two = {{"fake0"}, {"fake1"}};
  const std::string too_many =
      ": too many queue pairs or MRs: Apple allows 10 QPs and about 100 MRs per device; end "
      "other jobs using the device (or what a crashed job left running), or reboot to clear "
      "stale RDMA state";
  const std::string refused =
      ": the provider refused it: check that the device matrix "
      "(MLX_IBV_DEVICES) names the device on this cable";
  const std::string verbs_but = "CLUSTERCOMM_TRANSPORT=verbs, but rank 1: ";
  const Case cases[] = {
      {"a device the host lacks",
       two,
       {},
       "fake7",
       ErrorKind::kInvalidArgument,
       {"rank 1: RDMA device fake7 does not exist on this host (it has fake0, fake1)",
        "fix the device matrix (MLX_IBV_DEVICES) on every rank"}},
      {"ibv_open_device EBUSY",
       two,
       {{IbvCall::kOpenDevice, EBUSY, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {verbs_but + "cannot open fake1 port 1 (Device or resource busy)" + too_many}},
      {"ibv_alloc_pd ENOMEM",
       two,
       {{IbvCall::kAllocPd, ENOMEM, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {verbs_but +
        "cannot allocate a protection domain on fake1 port 1 (Cannot allocate "
        "memory)" +
        too_many}},
      {"ibv_alloc_pd EINVAL",
       two,
       {{IbvCall::kAllocPd, EINVAL, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {verbs_but + "cannot allocate a protection domain on fake1 port 1 (Invalid argument)" +
            refused,
        "; stale RDMA state after a crash is cleared only by a reboot"}},
      {"ibv_create_cq ENOMEM",
       two,
       {{IbvCall::kCreateCq, ENOMEM, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"CLUSTERCOMM_TRANSPORT=verbs, but rank 1, link to rank 0 on fake1 port 1: cannot create a "
        "completion queue "
        "(Cannot allocate memory)" +
        too_many}},
      {"ibv_create_qp EBUSY",
       two,
       {{IbvCall::kCreateQp, EBUSY, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"CLUSTERCOMM_TRANSPORT=verbs, but rank 1, link to rank 0 on fake1 port 1: cannot create a "
        "UC queue pair "
        "(Device or resource busy)" +
        too_many}},
      {"ibv_modify_qp INIT EINVAL",
       two,
       {{IbvCall::kModifyQpInit, EINVAL, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"CLUSTERCOMM_TRANSPORT=verbs, but rank 1, link to rank 0 on fake1 port 1: cannot move the "
        "queue pair to "
        "INIT (Invalid argument)" +
        refused}},
      {"port down",
       {{"fake0"}, {"fake1", IBV_PORT_DOWN}},
       {},
       "fake1",
       ErrorKind::kSystem,
       {verbs_but + "fake1 port 1 is not active (state 1): the peer at the other end of that "
                    "cable must have RDMA enabled, and the link must be up"}},
      {"no usable GID",
       {{"fake0"}, {"fake1", IBV_PORT_ACTIVE, false}},
       {},
       "fake1",
       ErrorKind::kSystem,
       {verbs_but + "fake1 has no IPv4 address, so no IPv4-mapped GID, and no link-local GID "
                    "either: run `clusterctl network apply` (fake1 port 1;"}},
      // After the job agreed on verbs: the failing rank sends its error in place of "ready".
      {"ibv_reg_mr ENOMEM",
       two,
       {{IbvCall::kRegMr, ENOMEM, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"rank 1, link to rank 0 on fake1 port 1: cannot register the frame rings (Cannot "
        "allocate memory)" +
        too_many}},
      {"ibv_modify_qp RTR EBUSY",
       two,
       {{IbvCall::kModifyQpRtr, EBUSY, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"rank 1, link to rank 0 on fake1 port 1: cannot move the queue pair to RTR (Device or "
        "resource busy)" +
        too_many}},
      {"ibv_modify_qp RTS EINVAL",
       two,
       {{IbvCall::kModifyQpRts, EINVAL, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"rank 1, link to rank 0 on fake1 port 1: cannot move the queue pair to RTS (Invalid "
        "argument)" +
        refused}},
      {"ibv_post_recv ENOMEM",
       two,
       {{IbvCall::kPostRecv, ENOMEM, "fake1"}},
       "fake1",
       ErrorKind::kSystem,
       {"rank 1, link to rank 0 on fake1 port 1: cannot post a receive (Cannot allocate "
        "memory)" +
        too_many}},
  };
  for (const Case& k : cases) {
    CAPTURE(std::string(k.name));
    fake_ibv_install(k.devices, k.faults);
    const std::vector<Outcome> got = start_two(k.rank1_device);
    fake_ibv_uninstall();
    for (size_t r = 0; r < 2; ++r) {
      CAPTURE(r);
      CAPTURE(got[r].message);
      CHECK(got[r].kind == k.kind);
      for (const std::string& s : k.says) CHECK(got[r].message.find(s) != std::string::npos);
      CHECK(got[r].ms < 3000);
    }
  }
}

TEST_CASE("verbs setup faults with CLUSTERCOMM_TRANSPORT=auto: one line, then TCP") {
  if (std::getenv("CLUSTERCOMM_TEST_IBV_DEVICES") != nullptr) return;
  fake_ibv_install({{"fake0"}, {"fake1"}}, {{IbvCall::kCreateQp, EBUSY, "fake1"}});
  const std::vector<Outcome> got = start_two("fake1", TransportKind::kAuto);
  fake_ibv_uninstall();
  for (const Outcome& o : got) {
    CAPTURE(o.message);
    CHECK(o.message.rfind("no error: tcp", 0) == 0);
  }
}

}  // namespace
}  // namespace cc::comm::test
