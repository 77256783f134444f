// POSIX socket helpers for the TCP transport and the bootstrap: an owning fd, address
// parsing ("ip:port", "[v6]:port", "host:port"), listen, connect with a deadline, and
// exact reads/writes with a deadline on non-blocking sockets. POSIX only (poll, no epoll),
// so it builds on macOS. Errors: cc::comm::Error (kSystem, kTimeout, kPeerLost).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "comm/transport/transport.h"

namespace cc::comm::tcp {

/// An owning file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

/// A resolved socket address.
struct Address {
  sockaddr_storage storage{};
  socklen_t len = 0;
  std::string to_string() const;  // "1.2.3.4:5" or "[::1]:5"
  int port() const;
  void set_port(int port);
  bool is_any() const;  // 0.0.0.0 or ::
  bool is_loopback() const;  // 127.0.0.0/8, ::1 or ::ffff:127.x.y.z
};

/// Splits "host:port" / "[v6]:port" / "host" (port = default_port). Throws kInvalidArgument.
void split_host_port(std::string_view s, std::string& host, int& port, int default_port = -1);
/// Resolves numerically or by name (getaddrinfo). Throws kInvalidArgument.
Address resolve(std::string_view host_port, int default_port = -1);

/// Sets O_NONBLOCK, TCP_NODELAY and (where it exists) SO_NOSIGPIPE.
void configure_stream(int fd);

/// A listening socket on `addr` (port 0 = ephemeral), SO_REUSEADDR, non-blocking.
Fd listen_on(const Address& addr, int backlog = 128);
Address local_address(int fd);
Address peer_address(int fd);

/// Connects to `to` (from `from` when given), retrying refused connections until `deadline`
/// (the listener may not be up yet), each attempt waiting at most 1 s for an answer, and
/// retrying when out of descriptors (EMFILE). Returns a configured non-blocking stream.
/// When connect() itself says this host has no route there (route_missing), retries for
/// kRouteGrace (a cable's route may be a moment away), then throws kSystem, naming `who`, the
/// address and the error (at the deadline, when that comes first): not the kTimeout of the
/// whole timeout for a route that is not coming.
/// `over_cable`: `to` is the peer's end of a direct cable (CLUSTERCOMM_PEER_ADDRS), which the
/// error's advice then names first (connect_advice).
Fd connect_to(const Address& to, const Address* from, Deadline deadline, const std::string& who,
              bool over_cable = false);
/// True for an errno that connect() returns at once when this host has no route to the
/// address (ENETUNREACH, EHOSTUNREACH): connect_to retries it for kRouteGrace only.
bool route_missing(int err);
/// How long connect_to retries a missing route: a cable's route appears when `clusterctl
/// network apply` has set its address and its link is up, which on a link just plugged in or
/// brought up takes a second or two; a route that is missing longer is a wrong address or a
/// host two cables away, said then instead of after the whole timeout.
inline constexpr std::chrono::milliseconds kRouteGrace{3000};
/// What connect_to's last errno means for the operator, "" when it says nothing more: ETIMEDOUT
/// (every SYN unanswered) is a firewall dropping `port` or an address not reached, as in
/// ml-explore/mlx#3755 ("Couldn't connect (error: 60)"); ECONNREFUSED nothing listening there.
/// With `over_cable` the address is a cable's: unanswered or unreachable is then first of all
/// the cable (unplugged, or its port down on one host), and a firewall second.
std::string connect_advice(int err, int port, bool over_cable = false);

/// Reads or writes exactly `bytes` on a non-blocking fd, polling until `deadline`.
/// `who` names the other end in errors ("rank 3", "the coordinator at 1.2.3.4:5").
void read_exact(int fd, void* buf, size_t bytes, Deadline deadline, const std::string& who);
void write_all(int fd, const void* buf, size_t bytes, Deadline deadline, const std::string& who);

/// send() flags that suppress SIGPIPE where the OS supports it per call.
int send_flags();

/// Milliseconds from now until `deadline`, clamped to [0, cap_ms], for poll(); to at most
/// kInterruptCheckEvery while an InterruptScope lives on this thread.
int poll_timeout_ms(Deadline deadline, int cap_ms);

/// While one lives on this thread, the waits of connect_to, read_exact and write_all (and
/// Acceptor::next) ask `interrupted` about every kInterruptCheckEvery and throw
/// Error(kInterrupted) when it says true: joining a world (bootstrap_connections) is then as
/// interruptible as a collective (Ctrl-C in Python while the other ranks are not up yet).
/// An empty function installs nothing. Scopes nest; the innermost one is asked.
class InterruptScope {
 public:
  explicit InterruptScope(const std::function<bool()>& interrupted);
  // Only a function that outlives the scope: a temporary would be gone at once.
  explicit InterruptScope(std::function<bool()>&&) = delete;
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  const std::function<bool()>* previous_;
};

/// Throws Error(kInterrupted) when this thread's InterruptScope says to give up; at most one
/// question per kInterruptCheckEvery.
void throw_if_interrupted();

}  // namespace cc::comm::tcp
