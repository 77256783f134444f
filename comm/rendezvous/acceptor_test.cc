// The Acceptor under hostile input: token-less peers from another address, a flood of silent
// connections, and the descriptor limit (EMFILE) while connections keep coming.
#include "comm/rendezvous/acceptor.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "comm/error.h"
#include "comm/rendezvous/handshake.h"
#include "comm/tests/thread_world.h"

namespace cc::comm {
namespace {

using std::chrono::milliseconds;

std::vector<tcp::Fd> one_listener(const std::string& addr) {
  std::vector<tcp::Fd> v;
  v.push_back(tcp::listen_on(tcp::resolve(addr)));
  return v;
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Starts a non-blocking connect of `fd` (made before the descriptors ran out) to `to`.
bool start_connect(int fd, const tcp::Address& to) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&to.storage), to.len);
  return rc == 0 || errno == EINPROGRESS;
}

// Takes every free descriptor but `keep`, and lowers the soft limit first so that is cheap;
// gives everything back when destroyed.
class FdFiller {
 public:
  FdFiller() {
    getrlimit(RLIMIT_NOFILE, &saved_);
    rlimit low = saved_;
    if (low.rlim_cur == RLIM_INFINITY || low.rlim_cur > 1024) low.rlim_cur = 1024;
    setrlimit(RLIMIT_NOFILE, &low);
    for (int fd; (fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fds_.push_back(fd);
  }
  /// Gives `n` descriptors back.
  void release(size_t n) {
    for (size_t k = 0; k < n && !fds_.empty(); ++k) {
      ::close(fds_.back());
      fds_.pop_back();
    }
  }
  ~FdFiller() {
    for (int fd : fds_) ::close(fd);
    setrlimit(RLIMIT_NOFILE, &saved_);
  }
  FdFiller(const FdFiller&) = delete;
  FdFiller& operator=(const FdFiller&) = delete;
  size_t taken() const { return fds_.size(); }

 private:
  rlimit saved_{};
  std::vector<int> fds_;
};

}  // namespace

TEST_CASE("acceptor: without a token only loopback peers are admitted") {
  Acceptor acc(one_listener("0.0.0.0:0"), "", milliseconds(5000));
  const int port = acc.addresses().at(0).port();
  const Deadline d = Clock::now() + milliseconds(5000);
  {
    tcp::Fd fd = tcp::connect_to(tcp::resolve("127.0.0.1:" + std::to_string(port)), nullptr, d,
                                 "the acceptor");
    client_handshake(fd.get(), "", "from loopback", d, "the acceptor");
    std::optional<Accepted> a = acc.next(d);
    REQUIRE(a.has_value());
    CHECK(a->hello == "from loopback");
    CHECK(a->peer.is_loopback());
  }
  CHECK(acc.rejected() == 0);
  const std::vector<std::string> ips = test::non_loopback_ipv4();
  if (ips.empty()) {
    MESSAGE("skipped the non-loopback half: this host has no IPv4 address but loopback");
    return;
  }
  tcp::Fd fd = tcp::connect_to(tcp::resolve(ips[0] + ":" + std::to_string(port)), nullptr, d,
                               "the acceptor");
  CHECK(!tcp::peer_address(fd.get()).is_loopback());
  try {
    client_handshake(fd.get(), "", "from " + ips[0], d, "the acceptor");
    FAIL("a token-less peer at ", ips[0], " was let through the handshake");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kAuth);
  }
  CHECK(!acc.next(Clock::now() + milliseconds(300)).has_value());
  CHECK(acc.rejected() == 1);
}

TEST_CASE("acceptor: a flood of silent connections cannot keep a real peer out") {
  AcceptorLimits limits;
  limits.max_pending = 4;
  limits.grace = milliseconds(100);
  const auto handshake_timeout = milliseconds(5000);
  Acceptor acc(one_listener("127.0.0.1:0"), "t", handshake_timeout, limits);
  const tcp::Address to = tcp::resolve("127.0.0.1:" + std::to_string(acc.addresses()[0].port()));
  const Deadline d = Clock::now() + milliseconds(10000);
  std::vector<tcp::Fd> silent;
  for (int i = 0; i < 30; ++i) silent.push_back(tcp::connect_to(to, nullptr, d, "the acceptor"));
  const auto start = Clock::now();
  std::string client_error;
  std::thread real([&] {
    try {
      tcp::Fd fd = tcp::connect_to(to, nullptr, d, "the acceptor");
      client_handshake(fd.get(), "t", "real", d, "the acceptor");
      // Hold the connection until the test has it.
      char c = 0;
      try {
        tcp::read_exact(fd.get(), &c, 1, Clock::now() + milliseconds(5000), "the acceptor");
      } catch (const Error&) {
      }
    } catch (const Error& e) {
      client_error = e.what();
    }
  });
  std::optional<Accepted> a = acc.next(d);
  const auto took = Clock::now() - start;
  REQUIRE(a.has_value());
  const char c = 1;
  CHECK(::write(a->fd.get(), &c, 1) == 1);
  real.join();
  CHECK(client_error.empty());
  CHECK(a->hello == "real");
  // Not by waiting out the silent ones' deadlines: they were shed to make room.
  CHECK(took < handshake_timeout);
  CHECK(acc.rejected() >= 26);
  CHECK(acc.max_pending() == 4);
}

TEST_CASE("acceptor: at the descriptor limit it backs off instead of spinning, and goes on") {
  AcceptorLimits limits;
  limits.max_pending = 8;
  limits.grace = milliseconds(100);
  limits.backoff = milliseconds(50);
  Acceptor acc(one_listener("127.0.0.1:0"), "t", milliseconds(5000), limits);
  const tcp::Address to = tcp::resolve("127.0.0.1:" + std::to_string(acc.addresses()[0].port()));
  // The client sockets exist before the descriptors run out.
  std::vector<tcp::Fd> silent;
  for (int i = 0; i < 12; ++i) silent.emplace_back(::socket(AF_INET, SOCK_STREAM, 0));
  tcp::Fd real(::socket(AF_INET, SOCK_STREAM, 0));
  for (const tcp::Fd& f : silent) REQUIRE(f.valid());
  REQUIRE(real.valid());
  // Nothing is checked while the descriptors are out (doctest could not report it).
  size_t taken = 0, hits = 0, cap_at_limit = 0, connected = 0;
  double cpu = 0;
  bool real_connected = false;
  std::string client_error;
  std::optional<Accepted> a;
  {
    FdFiller filler;  // no descriptor left: every accept() fails with EMFILE
    taken = filler.taken();
    for (const tcp::Fd& f : silent) connected += start_connect(f.get(), to);
    const double cpu0 = cpu_seconds();
    std::this_thread::sleep_for(milliseconds(1000));
    cpu = cpu_seconds() - cpu0;
    hits = acc.fd_limit_hits();
    cap_at_limit = acc.max_pending();
    // Three descriptors come free: the silent connections take turns on them (the cap is now
    // one), and the real peer, queued behind all twelve, still gets in.
    filler.release(3);
    pollfd p{real.get(), POLLOUT, 0};
    real_connected = start_connect(real.get(), to) && ::poll(&p, 1, 5000) == 1;
    if (real_connected) {
      const Deadline d = Clock::now() + milliseconds(10000);
      std::thread client([&] {
        try {
          client_handshake(real.get(), "t", "real", d, "the acceptor");
        } catch (const Error& e) {
          client_error = e.what();
        }
      });
      a = acc.next(d);
      client.join();
    }
  }
  CHECK(taken > 0);
  CHECK(connected == silent.size());
  CHECK(hits > 0);
  CHECK(hits < 100);  // about one per backoff (50 ms), not one per spin
  CHECK(cpu < 0.3);   // a spinning acceptor burns about 1 s of CPU here
  CHECK(cap_at_limit == 1);
  REQUIRE(real_connected);
  CHECK(client_error.empty());
  REQUIRE(a.has_value());
  CHECK(a->hello == "real");
}

}  // namespace cc::comm
