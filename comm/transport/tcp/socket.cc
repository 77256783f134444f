#include "comm/transport/tcp/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "comm/error.h"

namespace cc::comm::tcp {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string Address::to_string() const {
  char host[INET6_ADDRSTRLEN] = "?";
  std::string s;
  if (storage.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
    inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    s.append(host);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    s.append("[").append(host).append("]");
  }
  s.append(":").append(std::to_string(port()));
  return s;
}

int Address::port() const {
  if (storage.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  }
  return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
}

void Address::set_port(int port) {
  const auto p = htons(static_cast<uint16_t>(port));
  if (storage.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&storage)->sin_port = p;
  } else {
    reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = p;
  }
}

bool Address::is_any() const {
  if (storage.ss_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  return IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr);
}

bool Address::is_loopback() const {
  if (storage.ss_family == AF_INET) {
    const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (storage.ss_family != AF_INET6) return false;
  const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
  return IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
         (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
}

void split_host_port(std::string_view s, std::string& host, int& port, int default_port) {
  std::string_view port_part;
  if (!s.empty() && s.front() == '[') {
    const size_t close = s.find(']');
    if (close == std::string_view::npos) {
      throw Error(ErrorKind::kInvalidArgument, "bad address '" + std::string(s) + "'");
    }
    host = std::string(s.substr(1, close - 1));
    if (close + 1 < s.size()) {
      if (s[close + 1] != ':') {
        throw Error(ErrorKind::kInvalidArgument, "bad address '" + std::string(s) + "'");
      }
      port_part = s.substr(close + 2);
    }
  } else {
    const size_t colon = s.rfind(':');
    if (colon != std::string_view::npos && s.find(':') == colon) {
      host = std::string(s.substr(0, colon));
      port_part = s.substr(colon + 1);
    } else {
      host = std::string(s);
    }
  }
  if (port_part.empty()) {
    if (default_port < 0) {
      throw Error(ErrorKind::kInvalidArgument,
                  "address '" + std::string(s) + "' has no port (expected ip:port)");
    }
    port = default_port;
    return;
  }
  int p = 0;
  for (char c : port_part) {
    if (c < '0' || c > '9' || p > 65535) {
      throw Error(ErrorKind::kInvalidArgument, "bad port in '" + std::string(s) + "'");
    }
    p = p * 10 + (c - '0');
  }
  if (p > 65535) throw Error(ErrorKind::kInvalidArgument, "bad port in '" + std::string(s) + "'");
  port = p;
}

Address resolve(std::string_view host_port, int default_port) {
  std::string host;
  int port = 0;
  split_host_port(host_port, host, port, default_port);
  if (host.empty() || host == "*") host = "0.0.0.0";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw Error(ErrorKind::kInvalidArgument, "cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  Address a;
  // Prefer IPv4 when a name has both.
  const addrinfo* pick = res;
  for (const addrinfo* p = res; p != nullptr; p = p->ai_next) {
    if (p->ai_family == AF_INET) {
      pick = p;
      break;
    }
  }
  std::memcpy(&a.storage, pick->ai_addr, pick->ai_addrlen);
  a.len = pick->ai_addrlen;
  freeaddrinfo(res);
  a.set_port(port);
  return a;
}

void configure_stream(int fd) {
  const int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) throw_system("fcntl", errno);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
#ifdef SO_NOSIGPIPE
  setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof(one));
#endif
  // Socket buffers are left to the kernel's autotuning on purpose (Gloo sized SO_SNDBUF per
  // message and stalled from 16 KiB up: docs/platform.md#open-mpi-and-gloo).
}

int send_flags() {
#ifdef MSG_NOSIGNAL
  return MSG_NOSIGNAL;
#else
  return 0;
#endif
}

Fd listen_on(const Address& addr, int backlog) {
  Fd fd(::socket(addr.storage.ss_family, SOCK_STREAM, 0));
  if (!fd.valid()) throw_system("socket", errno);
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr.storage), addr.len) != 0) {
    throw_system("cannot listen on " + addr.to_string() + ": bind", errno);
  }
  if (::listen(fd.get(), backlog) != 0) throw_system("listen on " + addr.to_string(), errno);
  const int flags = fcntl(fd.get(), F_GETFL, 0);
  fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK);
  fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  return fd;
}

Address local_address(int fd) {
  Address a;
  a.len = sizeof(a.storage);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.len);
  return a;
}

Address peer_address(int fd) {
  Address a;
  a.len = sizeof(a.storage);
  getpeername(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.len);
  return a;
}

namespace {
// This thread's InterruptScope's function (nullptr: none), and when it may next be asked.
thread_local const std::function<bool()>* t_interrupted = nullptr;
thread_local Clock::time_point t_next_check{};
}  // namespace

InterruptScope::InterruptScope(const std::function<bool()>& interrupted)
    : previous_(t_interrupted) {
  if (interrupted) t_interrupted = &interrupted;
}

InterruptScope::~InterruptScope() {
  t_interrupted = previous_;
}

void throw_if_interrupted() {
  if (t_interrupted == nullptr) return;
  const auto now = Clock::now();
  if (now < t_next_check) return;
  t_next_check = now + kInterruptCheckEvery;
  if ((*t_interrupted)()) {
    throw Error(ErrorKind::kInterrupted, "interrupted (Config::interrupted said to give up)");
  }
}

int poll_timeout_ms(Deadline deadline, int cap_ms) {
  if (t_interrupted != nullptr) {
    cap_ms = std::min(cap_ms, static_cast<int>(kInterruptCheckEvery.count()));
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > cap_ms ? cap_ms : static_cast<int>(left.count()) + 1;
}

bool route_missing(int err) {
  // ENETUNREACH: no route to the address's network. EHOSTUNREACH said by connect() itself,
  // before any packet went out: a route of type unreachable, or no route for it (macOS says
  // so). An EHOSTUNREACH that comes back later (no ARP/ND answer: the host may be booting) is
  // not this one, and is retried.
  return err == ENETUNREACH || err == EHOSTUNREACH;
}

Fd connect_to(const Address& to, const Address* from, Deadline deadline, const std::string& who,
              bool over_cable) {
  int last_err = 0;
  // The first of the current run of no-route failures; max(): none (not std::optional: g++ 12
  // at -O3 took its value for uninitialized, -Werror=maybe-uninitialized).
  Clock::time_point no_route_since = Clock::time_point::max();
  while (true) {
    Fd fd(::socket(to.storage.ss_family, SOCK_STREAM, 0));
    if (!fd.valid() && errno != EMFILE && errno != ENFILE) throw_system("socket", errno);
    if (!fd.valid()) {  // out of descriptors for now: retry (the message says so at the end)
      last_err = errno;
      if (Clock::now() >= deadline) break;
      throw_if_interrupted();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
    if (from != nullptr &&
        ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&from->storage), from->len) != 0) {
      throw_system("cannot bind to local address " + from->to_string() + " to reach " + who, errno);
    }
    configure_stream(fd.get());
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.storage), to.len);
    if (rc != 0 && route_missing(errno)) {
      // This host has no route there. Right after `clusterctl network apply`, or while a
      // cable's link comes up, its route appears a moment later: retry for kRouteGrace (within
      // the deadline), then say so, rather than wait out the whole timeout for a route that
      // is not coming (a listener not up yet, ECONNREFUSED, retries until the deadline).
      last_err = errno;
      const auto now = Clock::now();
      if (no_route_since == Clock::time_point::max()) no_route_since = now;
      if (now - no_route_since >= kRouteGrace || now >= deadline) {
        throw Error(ErrorKind::kSystem, "could not connect to " + who + " at " + to.to_string() +
                                            " (" + std::strerror(last_err) + ")" +
                                            connect_advice(last_err, to.port(), over_cable));
      }
      fd = Fd();
      throw_if_interrupted();
      std::this_thread::sleep_for(std::min<Clock::duration>(
          std::chrono::milliseconds(50), std::max<Clock::duration>(deadline - now, {})));
      continue;
    }
    no_route_since = Clock::time_point::max();
    if (rc != 0 && errno == EINPROGRESS) {
      // At most 1 s per attempt: a listener whose queue is full (a flood) drops the SYN, and
      // the kernel would resend it only after 1, 3, 7, 15 s; a fresh attempt goes at once.
      const Deadline attempt = std::min(deadline, Clock::now() + std::chrono::seconds(1));
      pollfd p{fd.get(), POLLOUT, 0};
      while (true) {
        rc = ::poll(&p, 1, poll_timeout_ms(attempt, 100));
        if (rc > 0 || Clock::now() >= attempt) break;
        throw_if_interrupted();
      }
      if (rc > 0) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = ETIMEDOUT;
      }
    }
    if (rc == 0) return fd;
    last_err = errno;
    if (Clock::now() >= deadline) break;
    // Refused or unreachable: the listener may not be up yet. Retry until the deadline.
    throw_if_interrupted();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw Error(ErrorKind::kTimeout, "could not connect to " + who + " at " + to.to_string() +
                                       " before the timeout (" + std::strerror(last_err) + ")" +
                                       connect_advice(last_err, to.port(), over_cable));
}

std::string connect_advice(int err, int port, bool over_cable) {
  const std::string p = std::to_string(port);
  // A cable's address: a cable unplugged or a port down (`ip link set dev tb3 down`) drops
  // every SYN or has no route, and is far more common there than a firewall.
  const std::string cable =
      "that address is on the direct cable between the two hosts: is the cable plugged in, and "
      "its port up on both hosts (`ip link show` on Linux, `ifconfig` on macOS; `clusterctl "
      "health --quick` checks every cable)?";
  if (over_cable && err == ETIMEDOUT) {
    return ": no answer at all, not even a refusal: " + cable +
           " Else a firewall there drops TCP port " + p +
           " (on macOS: System Settings > Network > Firewall; on Linux: nft or iptables)";
  }
  if (over_cable && (err == EHOSTUNREACH || err == ENETUNREACH)) {
    return ": this host has no route to that address: " + cable;
  }
  if (err == ETIMEDOUT) {
    // Every attempt went unanswered: nothing (not even a refusal) came back.
    return ": no answer at all, not even a refusal: a firewall there drops TCP port " + p +
           " (on macOS: System Settings > Network > Firewall; on Linux: nft or iptables), or the "
           "address is on no network this host reaches";
  }
  if (err == ECONNREFUSED) {
    return ": the host answered, but nothing listens on port " + p + " there";
  }
  if (err == EHOSTUNREACH || err == ENETUNREACH) {
    return ": this host has no route to that address";
  }
  return "";
}

void read_exact(int fd, void* buf, size_t bytes, Deadline deadline, const std::string& who) {
  auto* p = static_cast<char*>(buf);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw Error(ErrorKind::kPeerLost, who + " closed the connection");
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      throw Error(ErrorKind::kPeerLost,
                  "connection to " + who + " failed: " + std::strerror(errno));
    }
    if (Clock::now() >= deadline) {
      throw Error(ErrorKind::kTimeout, "timed out waiting for " + who);
    }
    throw_if_interrupted();
    pollfd pfd{fd, POLLIN, 0};
    ::poll(&pfd, 1, poll_timeout_ms(deadline, 1000));
  }
}

void write_all(int fd, const void* buf, size_t bytes, Deadline deadline, const std::string& who) {
  const auto* p = static_cast<const char*>(buf);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, send_flags());
    if (n >= 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      throw Error(ErrorKind::kPeerLost,
                  "connection to " + who + " failed: " + std::strerror(errno));
    }
    if (Clock::now() >= deadline) {
      throw Error(ErrorKind::kTimeout, "timed out sending to " + who);
    }
    throw_if_interrupted();
    pollfd pfd{fd, POLLOUT, 0};
    ::poll(&pfd, 1, poll_timeout_ms(deadline, 1000));
  }
}

}  // namespace cc::comm::tcp
