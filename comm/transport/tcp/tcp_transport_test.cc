// TcpTransport::crowded(): true only when every peer is on this host (both ends of its
// connection on one address) and the world has more ranks than this host has online CPUs.
#include "comm/transport/tcp/tcp_transport.h"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

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

}  // namespace
}  // namespace cc::comm::tcp
