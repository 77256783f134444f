#include "remote/resolve.h"

#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "util/interrupt.h"

namespace cc::remote {
namespace {

constexpr std::chrono::milliseconds kPollInterval{50};  // how often Ctrl-C is looked at

// Shared by the caller and the lookup thread; the last of the two to let go frees the list.
struct Lookup {
  std::mutex mu;
  std::condition_variable done_cv;
  bool done = false;
  int status = 0;
  addrinfo* list = nullptr;
  ~Lookup() {
    if (list != nullptr) ::freeaddrinfo(list);
  }
};

}  // namespace

util::Result<Resolved> resolve_host(const std::string& host, const std::string& service,
                                    const addrinfo& hints, std::chrono::milliseconds timeout,
                                    LookupFn lookup) {
  auto shared = std::make_shared<Lookup>();
  addrinfo h{};  // only the hint fields: no pointers into the caller's memory
  h.ai_flags = hints.ai_flags;
  h.ai_family = hints.ai_family;
  h.ai_socktype = hints.ai_socktype;
  h.ai_protocol = hints.ai_protocol;
  try {
    std::thread([shared, host, service, h, lookup] {
      addrinfo* list = nullptr;
      const int status =
          lookup(host.c_str(), service.empty() ? nullptr : service.c_str(), &h, &list);
      std::lock_guard<std::mutex> lock(shared->mu);
      shared->status = status;
      shared->list = list;
      shared->done = true;
      shared->done_cv.notify_all();
    }).detach();
  } catch (const std::system_error& e) {
    return util::error(util::ExitCode::kUnreachable,
                       fmt::format("cannot look up '{}': no thread for the lookup ({})", host,
                                   e.what()));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock<std::mutex> lock(shared->mu);
  while (!shared->done) {
    if (util::interrupted()) {
      return util::interrupted_error(fmt::format(" while looking up '{}'", host));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return util::error(
          util::ExitCode::kUnreachable,
          fmt::format("no answer from the name lookup of '{}' within {:.3g} s (DNS, mDNS or "
                      "/etc/hosts): check the resolver (/etc/resolv.conf) and the network, or "
                      "give the host's address (HostName in the SSH config)",
                      host, std::chrono::duration<double>(timeout).count()));
    }
    shared->done_cv.wait_for(lock, std::min<std::chrono::steady_clock::duration>(
                                       kPollInterval, deadline - now));
  }
  Resolved r;
  r.status = shared->status;
  if (shared->list != nullptr) r.addresses = std::shared_ptr<const addrinfo>(shared, shared->list);
  return r;
}

}  // namespace cc::remote
