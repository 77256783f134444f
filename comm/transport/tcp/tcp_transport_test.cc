// TcpTransport::crowded(): true only when every peer is on this host (both ends of its
// connection on one address) and the world has more ranks than this host has online CPUs.
#include "comm/transport/tcp/tcp_transport.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport/tcp/socket.h"

namespace cc::comm::tcp {
namespace {

// A connected TCP pair: `ours` from `from` (an address of this host) to a listener on `to`.
struct TcpPair {
  Fd ours, theirs;
};
TcpPair tcp_pair(const std::string& from, const std::string& to) {
  Fd listener = listen_on(resolve(to + ":0"));
  const Address there = local_address(listener.get());
  const Address here = resolve(from + ":0");
  TcpPair p;
  p.ours = connect_to(there, &here, Clock::now() + std::chrono::seconds(5), "the test listener");
  for (int i = 0; i < 500 && !p.theirs.valid(); ++i) {
    p.theirs = Fd(::accept(listener.get(), nullptr, nullptr));
    if (!p.theirs.valid()) ::usleep(1000);
  }
  REQUIRE(p.theirs.valid());
  return p;
}

// Rank 0 of a world of `size` whose peer connections run from `from` to `to`; the far ends
// go to `far`, which the caller closes before the transport (so its close does not wait).
TcpTransport rank0(int size, const std::string& from, const std::string& to, std::vector<Fd>& far) {
  std::vector<std::vector<Fd>> conns(static_cast<size_t>(size));
  for (int p = 1; p < size; ++p) {
    for (int k = 0; k < 2; ++k) {  // one data connection, then the control connection
      TcpPair pair = tcp_pair(from, to);
      conns[static_cast<size_t>(p)].push_back(std::move(pair.ours));
      far.push_back(std::move(pair.theirs));
    }
  }
  TcpOptions o;
  o.close_timeout = std::chrono::milliseconds(200);
  return TcpTransport(0, size, std::move(conns), o);
}

TEST_CASE("tcp crowded: every peer on this host and more ranks than online CPUs") {
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  REQUIRE(cpus > 0);
  for (const int size : {2, static_cast<int>(cpus) + 1}) {
    CAPTURE(size);
    std::vector<Fd> far;
    TcpTransport t = rank0(size, "127.0.0.1", "127.0.0.1", far);
    CHECK(t.crowded() == (size > cpus));
    far.clear();
  }
}

TEST_CASE("tcp crowded: a peer at another address is another host") {
  // 127.0.0.2 is a loopback address on Linux; elsewhere (macOS: only 127.0.0.1) skip.
  Fd probe(::socket(AF_INET, SOCK_STREAM, 0));
  const Address a2 = resolve("127.0.0.2:0");
  if (::bind(probe.get(), reinterpret_cast<const sockaddr*>(&a2.storage), a2.len) != 0) return;
  probe.reset();
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  std::vector<Fd> far;
  TcpTransport t = rank0(static_cast<int>(cpus) + 1, "127.0.0.1", "127.0.0.2", far);
  CHECK_FALSE(t.crowded());
  far.clear();
}

TEST_CASE("tcp: data still moving keeps a wait past its deadline and silence for the stall timeout ends it") {
  using std::chrono::milliseconds;
  // A world of 2 over one data and one control connection on loopback.
  TcpPair data = tcp_pair("127.0.0.1", "127.0.0.1"), control = tcp_pair("127.0.0.1", "127.0.0.1");
  for (Fd* f : {&data.ours, &data.theirs, &control.ours, &control.theirs}) {
    ::fcntl(f->get(), F_SETFL, ::fcntl(f->get(), F_GETFL) | O_NONBLOCK);  // as the bootstrap's
  }
  std::vector<std::vector<Fd>> c0(2), c1(2);
  c0[1].push_back(std::move(data.ours));
  c0[1].push_back(std::move(control.ours));
  c1[0].push_back(std::move(data.theirs));
  c1[0].push_back(std::move(control.theirs));
  TcpOptions o;
  o.close_timeout = milliseconds(200);
  TcpTransport t0(0, 2, std::move(c0), o), t1(1, 2, std::move(c1), o);
  t0.set_stall_timeout(milliseconds(300));
  t1.set_stall_timeout(milliseconds(300));
  // Rank 0 sends 10 messages of 64 KiB, one every 60 ms: the transfer takes well over the
  // 300 ms deadline of rank 1's wait for the last one, yet never stops for 300 ms (the
  // earlier messages' bytes are movement too).
  constexpr int kMessages = 10;
  const size_t bytes = size_t{64} << 10;
  std::vector<char> big(bytes * kMessages), got(bytes * kMessages);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131 + (i >> 16));
  std::vector<Request> r(kMessages);
  for (int m = 0; m < kMessages; ++m) {
    t1.irecv(0, got.data() + static_cast<size_t>(m) * bytes, bytes, r[static_cast<size_t>(m)]);
  }
  std::thread sender([&] {
    for (int m = 0; m < kMessages; ++m) {
      Request s;
      try {
        t0.isend(1, big.data() + static_cast<size_t>(m) * bytes, bytes, s);
        t0.wait(s, Clock::now() + std::chrono::seconds(10));
      } catch (const Error&) {
        return;  // the receiver gave up: the checks below say why
      }
      std::this_thread::sleep_for(milliseconds(60));
    }
  });
  const auto start = Clock::now();
  std::string failed;
  try {
    t1.wait(r.back(), start + milliseconds(300));
  } catch (const Error& e) {
    failed = e.what();
  }
  const auto end = Clock::now();  // the last movement: the bytes that completed the receive
  const auto took = std::chrono::duration_cast<milliseconds>(end - start);
  sender.join();
  CHECK(failed == "");
  REQUIRE(r.back().done());
  CHECK(took.count() > 300);  // it outlived its deadline
  CHECK(got == big);
  // Then silence: a receive nobody answers fails 300 ms after the last movement, though its
  // own deadline is 1 ms away (the movement is remembered across waits).
  Request quiet;
  t1.irecv(0, got.data(), 8, quiet);
  try {
    t1.wait(quiet, Clock::now() + milliseconds(1));
    FAIL("no timeout");
  } catch (const Error& e) {
    const auto after = std::chrono::duration_cast<milliseconds>(Clock::now() - end);
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.ranks() == std::vector<int>{0});
    CHECK(after.count() >= 290);
    CHECK(after.count() < 2000);
  }
}

#ifdef __linux__
TEST_CASE("connect_to: no route to the address fails after the route grace, naming it, "
          "refused is retried") {
  // Linux refuses a TCP connect to a multicast address in connect() itself (ENETUNREACH), as
  // it does for a network this host has no route to (a ring hostfile's cable address of two
  // other hosts). A route that is missing for longer than kRouteGrace is not coming: before,
  // each rank waited out the whole timeout. (A route that appears within it: bootstrap_test.)
  const Address to = resolve("224.0.0.1:32323");
  const auto started = Clock::now();
  try {
    connect_to(to, nullptr, Clock::now() + std::chrono::seconds(30), "the coordinator (rank 0)");
    FAIL("connected to 224.0.0.1");
  } catch (const Error& e) {
    CAPTURE(e.what());
    const auto took = Clock::now() - started;
    CHECK(took >= kRouteGrace);
    CHECK(took < std::chrono::seconds(15));  // not the 30 s deadline
    CHECK(e.kind() == ErrorKind::kSystem);
    CHECK(e.message() ==
          "could not connect to the coordinator (rank 0) at 224.0.0.1:32323 (" +
              std::string(std::strerror(ENETUNREACH)) +
              "): this host has no route to that address");
  }
  CHECK(route_missing(ENETUNREACH));
  CHECK(route_missing(EHOSTUNREACH));
  CHECK_FALSE(route_missing(ECONNREFUSED));  // the listener may not be up yet
  CHECK_FALSE(route_missing(ETIMEDOUT));
  // Refused (nothing listens yet) is still retried until the deadline.
  Fd l = listen_on(resolve("127.0.0.1:0"));
  const Address free_port = local_address(l.get());
  l = Fd();
  try {
    connect_to(free_port, nullptr, Clock::now() + std::chrono::milliseconds(300), "rank 1");
    FAIL("connected to a closed port");
  } catch (const Error& e) {
    CAPTURE(e.what());
    CHECK(e.kind() == ErrorKind::kTimeout);
    CHECK(e.message().find("before the timeout (" + std::string(std::strerror(ECONNREFUSED)) +
                           ")") != std::string::npos);
  }
}
#endif

TEST_CASE("connect advice: an unanswered coordinator port names a firewall and the port") {
  // ml-explore/mlx#3755: "[jaccl] Couldn't connect (error: 60)" with rank 0 listening.
  const std::string dropped = connect_advice(ETIMEDOUT, 32323);
  CHECK(dropped.find("a firewall there drops TCP port 32323") != std::string::npos);
  CHECK(dropped.find("System Settings > Network > Firewall") != std::string::npos);
  CHECK(connect_advice(ECONNREFUSED, 5000) ==
        ": the host answered, but nothing listens on port 5000 there");
  CHECK(connect_advice(EMFILE, 1).empty());
}

TEST_CASE("connect advice: a cable's address names the cable first, the firewall second") {
  // A job over cluster.json with h2's tb3 down: every SYN to rank 1's cable address unanswered.
  const std::string dropped = connect_advice(ETIMEDOUT, 42503, /*over_cable=*/true);
  const auto cable = dropped.find("is the cable plugged in, and its port up on both hosts");
  const auto firewall = dropped.find("a firewall there drops TCP port 42503");
  CHECK(cable != std::string::npos);
  CHECK(firewall != std::string::npos);
  CHECK(cable < firewall);
  CHECK(
      dropped.starts_with(": no answer at all, not even a refusal: that address is on the "
                          "direct cable between the two hosts"));
  CHECK(connect_advice(EHOSTUNREACH, 1, true)
            .starts_with(
                ": this host has no route to that address: that address is on the direct cable"));
  // Refused: the cable works (the host answered).
  CHECK(connect_advice(ECONNREFUSED, 5000, true) ==
        ": the host answered, but nothing listens on port 5000 there");
  CHECK(connect_advice(ETIMEDOUT, 1, false).find("cable") == std::string::npos);
}

}  // namespace
}  // namespace cc::comm::tcp
