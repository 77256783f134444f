#include "comm/tests/thread_world.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace cc::comm::test {

std::vector<std::string> non_loopback_ipv4() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    sockaddr_in a{};
    std::memcpy(&a, i->ifa_addr, sizeof(a));
    if ((ntohl(a.sin_addr.s_addr) >> 24) == 127) continue;
    char host[INET_ADDRSTRLEN] = "";
    ::inet_ntop(AF_INET, &a.sin_addr, host, sizeof(host));
    out.emplace_back(host);
  }
  ::freeifaddrs(list);
  return out;
}

std::vector<TransportKind> thread_transports() {
  const char* path = std::getenv("CLUSTERCOMM_TEST_IBV_DEVICES");
  if (path != nullptr && *path != '\0') return {TransportKind::kVerbs};
  return {TransportKind::kTcp, TransportKind::kShm};
}

std::string transport_prefix(TransportKind kind) {
  switch (kind) {
    case TransportKind::kTcp:
      return "tcp";
    case TransportKind::kShm:
      return "shm (";
    case TransportKind::kVerbs:
      return "verbs";
    case TransportKind::kAuto:
      break;
  }
  return "";
}

// CLUSTERCOMM_TEST_IBV_DEVICES = an MLX device matrix of at least n hosts (the rdma-vm
// guest's): rank r runs on verbs with row r of its top-left n x n corner.
void use_verbs_if_asked(Config& c) {
  const char* path = std::getenv("CLUSTERCOMM_TEST_IBV_DEVICES");
  if (path == nullptr || *path == '\0' || c.size < 2) return;
  const std::string rank = std::to_string(c.rank);
  const Config m = config_from_env([&](const char* k) -> const char* {
    const std::string key = k;
    if (key == "MLX_RANK") return rank.c_str();
    if (key == "MLX_IBV_DEVICES") return path;
    if (key == "MLX_JACCL_COORDINATOR") return "127.0.0.1:1";
    if (key == "CLUSTERCOMM_IBV_PROFILE") return std::getenv(k);  // the rdma suite's rc run
    return nullptr;
  });
  if (m.size < c.size) return;
  c.devices.assign(m.devices.begin(), m.devices.begin() + c.size);
  c.ibv_profile = m.ibv_profile;
  c.transport = TransportKind::kVerbs;
}

std::vector<std::string> run_threads(int n, const std::function<void(Communicator&)>& body,
                                     Config base, const std::function<void(Config&)>& per_rank) {
  base.size = n;
  // Rank 0 listens on a port the kernel picks and hands it to the others through `port`.
  const bool pick_port = base.coordinator.empty();
  if (pick_port) base.coordinator = "127.0.0.1:0";
  if (base.token.empty()) base.token = "thread-world-token";
  std::promise<int> port_promise;
  std::shared_future<int> port = port_promise.get_future().share();
  std::once_flag port_set;
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Config c = base;
        c.rank = r;
        if (pick_port && r == 0) {
          c.on_coordinator_listening = [&](int p) {
            std::call_once(port_set, [&] { port_promise.set_value(p); });
          };
        } else if (pick_port) {
          if (port.wait_for(c.timeout) != std::future_status::ready) {
            throw std::runtime_error("rank 0 did not report its coordinator port within " +
                                     std::to_string(c.timeout.count()) + " ms");
          }
          c.coordinator = "127.0.0.1:" + std::to_string(port.get());  // throws if rank 0 did
        }
        use_verbs_if_asked(c);
        if (per_rank) per_rank(c);
        Communicator comm(c);
        body(comm);
      } catch (const std::exception& e) {
        if (pick_port && r == 0) {
          std::call_once(port_set, [&] {
            port_promise.set_exception(std::make_exception_ptr(
                std::runtime_error(std::string("rank 0 failed before listening: ") + e.what())));
          });
        }
        std::lock_guard lock(mu);
        errors.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<std::string> run_threads_over(std::vector<std::unique_ptr<Transport>> transports,
                                          const std::function<void(Communicator&)>& body,
                                          Config base) {
  const int n = static_cast<int>(transports.size());
  base.size = n;
  std::mutex mu;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Config c = base;
        c.rank = r;
        Communicator comm(c, std::move(transports[static_cast<size_t>(r)]));
        body(comm);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        errors.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace cc::comm::test
