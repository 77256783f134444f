// Coordinator port 0 (Config::on_coordinator_listening): rank 0 listens on a port the kernel
// picks and reports it, and the other ranks join there; port 0 where no one could learn the
// port is refused at once; ranks of different libclustercomm builds (wire protocols, shared-
// memory segment versions) name each other at once, on every rank.
#include <doctest/doctest.h>

#ifdef __linux__
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#endif

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "comm/clustercomm.h"
#include "comm/rendezvous/bootstrap.h"
#include "comm/rendezvous/acceptor.h"
#include "comm/rendezvous/handshake.h"
#include "comm/rendezvous/wire.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/tcp/socket.h"

namespace cc::comm {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

Config rank_config(int rank, int size, const std::string& coordinator) {
  Config c;
  c.rank = rank;
  c.size = size;
  c.coordinator = coordinator;
  c.token = "bootstrap-test-token";
  c.timeout = milliseconds(20000);
  return c;
}

// Expects Communicator(c) to throw kInvalidArgument mentioning `what`, well before the timeout.
void check_refused(const Config& c, const std::string& what) {
  const auto started = Clock::now();
  try {
    Communicator comm(c);
    FAIL("no error for coordinator ", c.coordinator, " on rank ", c.rank);
  } catch (const Error& e) {
    CAPTURE(e.what());
    CHECK(e.kind() == ErrorKind::kInvalidArgument);
    CHECK(std::string(e.what()).find(what) != std::string::npos);
  }
  CHECK(Clock::now() - started < milliseconds(5000));
}

}  // namespace

TEST_CASE("coordinator port 0: rank 0 reports the port the kernel picked, the others join on it") {
  const int n = 3;
  std::promise<int> reported;
  std::future<int> port_future = reported.get_future();
  std::atomic<int> calls{0};
  std::thread::id called_on;
  std::thread::id rank0_thread;
  int sums[n] = {};
  std::string errors[n];
  std::thread rank0([&] {
    rank0_thread = std::this_thread::get_id();
    Config c = rank_config(0, n, "127.0.0.1:0");
    c.on_coordinator_listening = [&](int port) {
      called_on = std::this_thread::get_id();
      if (calls++ == 0) reported.set_value(port);
    };
    try {
      Communicator comm(c);
      int v = 1;
      comm.all_reduce(&v, &v, 1, DataType::kI32, ReduceOp::kSum);
      sums[0] = v;
    } catch (const std::exception& e) {
      errors[0] = e.what();
      if (calls == 0) reported.set_exception(std::current_exception());
    }
  });
  int port = 0;
  try {
    if (port_future.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      throw std::runtime_error("no port within 20 s");
    }
    port = port_future.get();
  } catch (const std::exception& e) {
    rank0.join();
    FAIL("rank 0 reported no coordinator port (", e.what(), "): ", errors[0]);
  }
  CHECK(port > 0);
  CHECK(port <= 65535);
  // It listens there already: a connection is accepted (and refused for want of the token).
  {
    tcp::Fd probe = tcp::connect_to(tcp::resolve("127.0.0.1:" + std::to_string(port)), nullptr,
                                    Clock::now() + milliseconds(5000), "rank 0");
  }
  std::thread others[n - 1];
  for (int r = 1; r < n; ++r) {
    others[r - 1] = std::thread([&, r] {
      try {
        Communicator comm(rank_config(r, n, "127.0.0.1:" + std::to_string(port)));
        int v = 1 << r;
        comm.all_reduce(&v, &v, 1, DataType::kI32, ReduceOp::kSum);
        sums[r] = v;
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : others) t.join();
  rank0.join();
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");
    CHECK(sums[r] == 1 + 2 + 4);
  }
  CHECK(calls == 1);
  CHECK(called_on == rank0_thread);  // on the thread that constructs rank 0's Communicator
}

TEST_CASE("coordinator port 0 is refused where no one could learn the port") {
  // A rank other than 0 must be given rank 0's real port.
  check_refused(rank_config(1, 2, "127.0.0.1:0"),
                "rank 1: the coordinator address 127.0.0.1:0 "
                "has port 0: only rank 0 may be given port 0");
  // Rank 0 without the callback: no one would learn the port.
  check_refused(rank_config(0, 2, "127.0.0.1:0"),
                "rank 0: the coordinator address 127.0.0.1:0 has port 0, but nothing would "
                "learn the port");
}

TEST_CASE("a coordinator port in use names where the port was set, not a variable never set") {
  // Something else listens on the port already.
  const tcp::Fd taken = tcp::listen_on(tcp::resolve("127.0.0.1:0"));
  const int port = tcp::local_address(taken.get()).port();
  const std::string coord = "127.0.0.1:" + std::to_string(port);
  auto message = [&](const std::string& from) {
    Config c = rank_config(0, 2, coord);
    c.coordinator_from = from;
    const auto started = Clock::now();
    try {
      Communicator comm(c);
    } catch (const Error& e) {
      CHECK(Clock::now() - started < milliseconds(5000));
      return std::string(e.what());
    }
    FAIL("rank 0 listened on a port in use");
    return std::string();
  };
  // Set by clusterctl launch from the job file: the job file's field, no variable.
  const std::string launched = message("`coordinator_port:` in job.yaml (now " +
                                       std::to_string(port) + ")");
  CAPTURE(launched);
  CHECK(launched.find("the coordinator address " + coord + " comes from `coordinator_port:` in "
                      "job.yaml (now " + std::to_string(port) + "): choose a port there that "
                      "is free on rank 0's host") != std::string::npos);
  CHECK(launched.find("CLUSTERCOMM_COORDINATOR") == std::string::npos);
  // Set by the operator's variable: that variable.
  const std::string by_env = message("CLUSTERCOMM_COORDINATOR");
  CAPTURE(by_env);
  CHECK(by_env.find("CLUSTERCOMM_COORDINATOR must name an address of rank 0's host and a free "
                    "port") != std::string::npos);
  // Set in code: the Config field.
  CHECK(message("").find("Config::coordinator must name") != std::string::npos);
}

TEST_CASE("a rank that cannot reach a peer's cable address fails first, naming it and why") {
  // Rank 0 connects to rank 1 (the lower rank of a pair opens), here through a route to an
  // address where nothing listens, as when rank 1's host lost its cable address: rank 0's
  // connect is refused until the timeout. Rank 1 waits for that connection; before, both gave
  // up at the same moment and a launcher often showed only rank 1's bare "rank 0 never
  // connected to rank 1". Now rank 1 waits a second longer, so rank 0's error comes first.
  std::promise<int> port;
  std::string errors[2];
  Clock::time_point failed_at[2];
  std::thread rank0([&] {
    Config c = rank_config(0, 2, "127.0.0.1:0");
    c.timeout = milliseconds(2000);
    c.routes = {PeerRoute{}, PeerRoute{"127.0.0.1:1", ""}};
    c.on_coordinator_listening = [&](int p) { port.set_value(p); };
    try {
      Communicator comm(c);
    } catch (const Error& e) {
      errors[0] = e.what();
    }
    failed_at[0] = Clock::now();
  });
  auto f = port.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  Config c = rank_config(1, 2, "127.0.0.1:" + std::to_string(f.get()));
  c.timeout = milliseconds(2000);
  try {
    Communicator comm(c);
  } catch (const Error& e) {
    errors[1] = e.what();
  }
  failed_at[1] = Clock::now();
  rank0.join();
  CAPTURE(errors[0]);
  CAPTURE(errors[1]);
  CHECK(errors[0].find("rank 0: could not connect to rank 1 at 127.0.0.1:1") != std::string::npos);
  CHECK(errors[0].find("Connection refused") != std::string::npos);
  CHECK(errors[0].find("the host answered, but nothing listens on port 1 there") !=
        std::string::npos);
  CHECK(errors[0].find("(it is rank 1's address on the cable between them: "
                       "CLUSTERCOMM_PEER_ADDRS)") != std::string::npos);
  CHECK(errors[1].find("rank 0 never connected to rank 1") != std::string::npos);
  CHECK(failed_at[1] - failed_at[0] > milliseconds(500));
}

TEST_CASE(
    "an exception thrown by on_coordinator_listening ends start-up: the constructor rethrows it") {
  Config c = rank_config(0, 2, "127.0.0.1:0");
  int port = 0;
  c.on_coordinator_listening = [&](int p) {
    port = p;
    throw std::runtime_error("cannot hand on the port");
  };
  const auto started = Clock::now();
  CHECK_THROWS_WITH_AS(Communicator{c}, "cannot hand on the port", std::runtime_error);
  CHECK(port > 0);
  CHECK(Clock::now() - started < milliseconds(5000));  // at once, not at the timeout
}

}  // namespace cc::comm

namespace cc::comm {
namespace {

// Joins (Communicator(c)) with Config::interrupted turning true `after` from now; returns the
// error and how long the constructor took from that moment.
std::pair<Error, milliseconds> interrupted_join(Config c, milliseconds after) {
  const auto give_up_at = Clock::now() + after;
  c.interrupted = [give_up_at] { return Clock::now() >= give_up_at; };
  try {
    Communicator comm(c);
  } catch (const Error& e) {
    return {e, std::chrono::duration_cast<milliseconds>(Clock::now() - give_up_at)};
  }
  FAIL("joining was not interrupted");
  return {Error(ErrorKind::kSystem, "unreachable"), milliseconds(0)};
}

}  // namespace

TEST_CASE("joining is interruptible: rank 0 waiting for ranks that never come") {
  // Timeout 30 s: without the check, the constructor would wait that long and say kTimeout.
  Config c = rank_config(0, 3, "127.0.0.1:0");
  c.timeout = milliseconds(30000);
  c.on_coordinator_listening = [](int) {};
  const auto [error, late] = interrupted_join(c, milliseconds(200));
  const std::string what = error.what();  // (clang 14 cannot capture a structured binding)
  CAPTURE(what);
  CHECK(error.kind() == ErrorKind::kInterrupted);
  CHECK(late < milliseconds(5000));  // the point is "not 30 s": no tight figure on a loaded CI
}

TEST_CASE("joining is interruptible: a rank whose coordinator never answers") {
  // A listener that never accepts: the kernel completes the connection, the JOIN is sent, and
  // the answer never comes; the rank waits in read_exact until the timeout.
  tcp::Fd silent = tcp::listen_on(tcp::resolve("127.0.0.1:0"));
  const int port = tcp::local_address(silent.get()).port();
  Config c = rank_config(1, 2, "127.0.0.1:" + std::to_string(port));
  c.timeout = milliseconds(30000);
  const auto [error, late] = interrupted_join(c, milliseconds(200));
  const std::string what = error.what();  // (clang 14 cannot capture a structured binding)
  CAPTURE(what);
  CHECK(error.kind() == ErrorKind::kInterrupted);
  CHECK(late < milliseconds(5000));
}

namespace {

struct Refusal {
  std::string rank0;  // rank 0's error
  ErrorKind kind0 = ErrorKind::kSystem;
  std::string reply;  // what rank 0 answered the hand-made joiner
};

// Rank 0 of a world of 2 meets a hand-made join for rank 1 (`hello`, after the token).
Refusal refused_join(const std::string& hello) {
  std::promise<int> port;
  Refusal out;
  std::thread rank0([&] {
    Config c = rank_config(0, 2, "127.0.0.1:0");
    c.on_coordinator_listening = [&](int p) { port.set_value(p); };
    try {
      Communicator comm(c);
      out.rank0 = "no error";
    } catch (const Error& e) {
      out.rank0 = e.what();
      out.kind0 = e.kind();
    }
  });
  auto f = port.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const Deadline deadline = Clock::now() + milliseconds(5000);
  tcp::Fd fd = tcp::connect_to(tcp::resolve("127.0.0.1:" + std::to_string(f.get())), nullptr,
                               deadline, "rank 0");
  client_handshake(fd.get(), "bootstrap-test-token", hello, deadline, "rank 0");
  char len_buf[4];
  tcp::read_exact(fd.get(), len_buf, 4, deadline, "rank 0");
  out.reply.assign(WireReader(std::string_view(len_buf, 4)).u32(), '\0');
  tcp::read_exact(fd.get(), out.reply.data(), out.reply.size(), deadline, "rank 0");
  rank0.join();
  return out;
}

}  // namespace

TEST_CASE("a rank of an older or newer libclustercomm is named at start-up, not timed out") {
  // A join is {kind 1, rank, size, addresses, transport, wire protocol, shared-memory segment
  // version}. Older builds end it early: rank 0 fails at once with kWorld naming the rank and
  // both builds, and tells the joiner the same.
  struct Case {
    const char* name;
    std::string hello;
    std::string cause;
  };
  const std::string head = WireWriter().u32(1).u32(1).u32(2).u32(1).str("127.0.0.1:1").data();
  const Case cases[] = {
      {"no transport", head,
       "runs an older libclustercomm than rank 0 (wire protocol 0, rank 0's is 5): run the "
       "same version on every rank"},
      {"no wire protocol", head + WireWriter().u32(0).data(),
       "runs an older libclustercomm than rank 0 (wire protocol 1, rank 0's is 5)"},
      // 2: messages without the signature of their call (what it reduces).
      {"unsigned messages", head + WireWriter().u32(0).u32(2).data(),
       "runs an older libclustercomm than rank 0 (wire protocol 2, rank 0's is 5)"},
      // 3: a join without the shared-memory segment's version (segments 3 and 4 both spoke it).
      {"no segment version", head + WireWriter().u32(0).u32(3).data(),
       "runs an older libclustercomm than rank 0 (wire protocol 3, rank 0's is 5)"},
      // 4: a join without the rank's address on the coordinator's network.
      {"no coordinator network address",
       head + WireWriter().u32(0).u32(4).u32(shm::kSegmentVersion).data(),
       "runs an older libclustercomm than rank 0 (wire protocol 4, rank 0's is 5)"},
      {"a newer one", head + WireWriter().u32(0).u32(6).u32(shm::kSegmentVersion).data(),
       "runs a newer libclustercomm than rank 0 (wire protocol 6, rank 0's is 5)"},
      // Same wire protocol, another shared-memory segment layout.
      {"an older segment",
       head + WireWriter().u32(0).u32(5).u32(shm::kSegmentVersion - 1).str("").data(),
       "runs an older libclustercomm than rank 0 (shared-memory segment version " +
           std::to_string(shm::kSegmentVersion - 1) + ", rank 0's is " +
           std::to_string(shm::kSegmentVersion) +
           "; both wire protocol 5): ranks of one host could not share memory; run the same "
           "version on every rank"},
      {"a newer segment",
       head + WireWriter().u32(0).u32(5).u32(shm::kSegmentVersion + 1).str("").data(),
       "runs a newer libclustercomm than rank 0 (shared-memory segment version " +
           std::to_string(shm::kSegmentVersion + 1) + ", rank 0's is " +
           std::to_string(shm::kSegmentVersion) + "; both wire protocol 5)"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const auto started = Clock::now();
    const Refusal r = refused_join(k.hello);
    CAPTURE(r.rank0);
    CHECK(r.kind0 == ErrorKind::kWorld);
    CHECK(r.rank0.find("rank 1 (from 127.0.0.1") != std::string::npos);
    CHECK(r.rank0.find(k.cause) != std::string::npos);
    CHECK(r.reply.find(k.cause) != std::string::npos);  // the joiner is told too
    CHECK(Clock::now() - started < milliseconds(10000));
  }
}

// Ranks of builds whose shared-memory segments differ (same wire protocol) used to form the
// world and then run the ranks of a host on TCP with one line (or fail with
// CLUSTERCOMM_TRANSPORT=shm). Now rank 0 refuses the join, and every rank hears why, the ones
// that join after the refusal too. World of 3: a hand-made rank 1 with segment version
// kSegmentVersion - 1 joins first, then the real rank 2.
TEST_CASE("a rank of another shared-memory segment version fails every rank at start-up") {
  std::promise<int> port;
  std::string rank0, rank2, reply;
  ErrorKind kind0 = ErrorKind::kSystem, kind2 = ErrorKind::kSystem;
  const auto started = Clock::now();
  std::thread t0([&] {
    Config c = rank_config(0, 3, "127.0.0.1:0");
    c.on_coordinator_listening = [&](int p) { port.set_value(p); };
    try {
      Communicator comm(c);
      rank0 = "no error";
    } catch (const Error& e) {
      rank0 = e.what();
      kind0 = e.kind();
    }
  });
  auto f = port.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  const std::string coordinator = "127.0.0.1:" + std::to_string(f.get());
  try {  // (without the check, rank 0 answers only once rank 2 has joined: no answer here)
    const Deadline deadline = Clock::now() + milliseconds(3000);
    tcp::Fd fd = tcp::connect_to(tcp::resolve(coordinator), nullptr, deadline, "rank 0");
    WireWriter hello;
    hello.u32(1).u32(1).u32(3).u32(1).str("127.0.0.1:1");  // join, rank 1 of 3, its address
    hello.u32(0).u32(5).u32(shm::kSegmentVersion - 1);     // auto, wire protocol 5
    hello.str("");                                         // no coordinator network address
    client_handshake(fd.get(), "bootstrap-test-token", hello.data(), deadline, "rank 0");
    char len_buf[4];
    tcp::read_exact(fd.get(), len_buf, 4, deadline, "rank 0");
    reply.assign(WireReader(std::string_view(len_buf, 4)).u32(), '\0');
    tcp::read_exact(fd.get(), reply.data(), reply.size(), deadline, "rank 0");
  } catch (const Error& e) {
    reply = std::string("no answer: ") + e.what();
  }
  try {
    Communicator comm(rank_config(2, 3, coordinator));
    rank2 = "no error";
  } catch (const Error& e) {
    rank2 = e.what();
    kind2 = e.kind();
  }
  t0.join();
  const std::string cause = "rank 1 (from 127.0.0.1:";
  const std::string versions =
      " runs an older libclustercomm than rank 0 (shared-memory segment version " +
      std::to_string(shm::kSegmentVersion - 1) + ", rank 0's is " +
      std::to_string(shm::kSegmentVersion) + "; both wire protocol 5)";
  CAPTURE(rank0);
  CAPTURE(rank2);
  CAPTURE(reply);
  CHECK(kind0 == ErrorKind::kWorld);
  CHECK(kind2 == ErrorKind::kWorld);
  for (const std::string& m : {rank0, rank2, reply}) {
    CHECK(m.find(cause) != std::string::npos);
    CHECK(m.find(versions) != std::string::npos);
  }
  CHECK(rank2.find("(reported by the coordinator)") != std::string::npos);
  CHECK(Clock::now() - started < milliseconds(15000));  // the timeout is 20 s
}

#ifdef __linux__  // 127.0.0.10 and up are loopback addresses on Linux alone
TEST_CASE("an MLX ring of 4: ring neighbours connect at the ring addresses, the others over "
          "the coordinator's network") {
  // MLX_HOSTFILE gives each rank its ends of the cables to its left neighbour: only its ring
  // neighbours reach them. Before, ranks 0 and 2 (and 1 and 3) connected there too, which
  // over cables has no route ("Network is unreachable"). 127.0.0.10 + r stands for rank r's
  // cable end; the coordinator, 127.0.0.1, for the management network.
  const int n = 4;
  std::promise<int> port;
  auto port_future = port.get_future().share();
  std::vector<std::vector<tcp::Fd>> conns[n];
  std::string errors[n];
  std::vector<std::thread> ranks;
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      Config c = rank_config(r, n, "127.0.0.1:0");
      bool told = false;
      c.topology = Topology::kRing;
      c.listen = {"127.0.0." + std::to_string(10 + r) + ":0"};
      c.listen_ring_neighbours_only = true;
      try {
        if (r == 0) {
          c.on_coordinator_listening = [&](int p) {
            port.set_value(p);
            told = true;
          };
        } else {
          if (port_future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
            errors[r] = "rank 0 never listened";
            return;
          }
          c.coordinator = "127.0.0.1:" + std::to_string(port_future.get());
        }
        JobSettings settings;
        conns[r] = bootstrap_connections(c, settings);
      } catch (const std::exception& e) {
        errors[r] = e.what();
        if (r == 0 && !told) port.set_exception(std::current_exception());
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    REQUIRE(errors[r] == "");
    REQUIRE(conns[r].size() == static_cast<size_t>(n));
  }
  const std::string coordinator = "127.0.0.1:" + std::to_string(port_future.get());
  const auto peer = [&](size_t from, size_t to) {
    return tcp::peer_address(conns[from][to][0].get());
  };
  const auto host = [](const tcp::Address& a) {
    const std::string s = a.to_string();
    return s.substr(0, s.rfind(':'));
  };
  // Ring neighbours: the lower rank opens to the next (the wrap: rank 3 to rank 0), at the
  // ring address.
  CHECK(host(peer(0, 1)) == "127.0.0.11");
  CHECK(host(peer(1, 2)) == "127.0.0.12");
  CHECK(host(peer(2, 3)) == "127.0.0.13");
  CHECK(host(peer(3, 0)) == "127.0.0.10");
  // Not neighbours: rank 2 reaches rank 0 at the coordinator, rank 3 reaches rank 1 where
  // rank 0 saw rank 1 join from, on its listener there (not its ring address).
  CHECK(peer(2, 0).to_string() == coordinator);
  CHECK(host(peer(3, 1)) == "127.0.0.1");
  CHECK(tcp::local_address(conns[1][3][0].get()).to_string() == peer(3, 1).to_string());
  CHECK(peer(3, 1).port() != tcp::resolve(coordinator).port());
}
#endif

TEST_CASE("a rank joining an older coordinator names it at start-up") {
  // An older rank 0 ignores the wire protocol in the join and answers with the world table
  // alone: the joiner fails at once with kWorld naming rank 0, before any data connection.
  std::vector<tcp::Fd> listeners;
  listeners.push_back(tcp::listen_on(tcp::resolve("127.0.0.1:0")));
  Acceptor acc(std::move(listeners), "bootstrap-test-token", milliseconds(5000));
  const std::string coordinator = "127.0.0.1:" + std::to_string(acc.addresses()[0].port());
  std::string error;
  ErrorKind kind = ErrorKind::kSystem;
  const auto started = Clock::now();
  std::thread rank1([&] {
    try {
      Communicator comm(rank_config(1, 2, coordinator));
      error = "no error";
    } catch (const Error& e) {
      error = e.what();
      kind = e.kind();
    }
  });
  std::optional<Accepted> join = acc.next(Clock::now() + milliseconds(10000));
  REQUIRE(join.has_value());
  // The old reply: status 0, world id, connections, mesh, one-shot, chunk, window, the table.
  WireWriter w;
  w.u32(0).u64(42).u32(1).u32(0).u64(65536).u64(262144).u64(8);
  w.u32(1).str("127.0.0.1:1").u32(1).str("127.0.0.1:2");
  const std::string framed = WireWriter().str(w.data()).data();
  tcp::write_all(join->fd.get(), framed.data(), framed.size(), Clock::now() + milliseconds(5000),
                 "rank 1");
  rank1.join();
  CAPTURE(error);
  CHECK(kind == ErrorKind::kWorld);
  CHECK(error.find("the coordinator (rank 0) at " + coordinator +
                   " runs an older libclustercomm than rank 1 (its answer carries no wire "
                   "protocol, this rank's is 5): run the same version on every rank") !=
        std::string::npos);
  CHECK(Clock::now() - started < milliseconds(10000));
}

}  // namespace cc::comm

#ifdef __linux__
namespace cc::comm {

TEST_CASE("a rank with no route to the coordinator fails after the route grace, naming "
          "itself, the address and where it came from") {
  // Linux refuses a TCP connect to a multicast address in connect() (ENETUNREACH), as for a
  // network with no route (rank 0's ring cable address, seen from a host two hops away).
  Config c = rank_config(1, 3, "224.0.0.1:32323");
  c.timeout = milliseconds(30000);
  c.coordinator_from = "MLX_HOSTFILE";
  const auto started = Clock::now();
  try {
    Communicator comm(c);
    FAIL("joined a coordinator at 224.0.0.1");
  } catch (const Error& e) {
    CAPTURE(e.what());
    CHECK(Clock::now() - started < milliseconds(15000));  // not the 30 s timeout
    CHECK(e.kind() == ErrorKind::kSystem);  // before: kTimeout, after the whole timeout
    CHECK(e.ranks() == std::vector<int>{0});
    const std::string m = e.message();
    CHECK(m.starts_with("rank 1: could not connect to the coordinator (rank 0) at "
                        "224.0.0.1:32323 ("));
    CHECK(m.find("this host has no route to that address: the coordinator must be an address "
                 "every rank reaches; it came from MLX_HOSTFILE (rank 0's first address there)") !=
          std::string::npos);
    CHECK(m.find("set CLUSTERCOMM_COORDINATOR on every rank to HOST:PORT of rank 0's host") !=
          std::string::npos);
  }
  c.coordinator_from = "`coordinator_port:` in job.yaml (now 32323)";
  try {
    Communicator comm(c);
    FAIL("joined a coordinator at 224.0.0.1");
  } catch (const Error& e) {
    CHECK(std::string(e.message())
              .ends_with("it came from `coordinator_port:` in job.yaml (now 32323): name one "
                         "there that every rank's host has a route to"));
  }
}

namespace {

// An ioctl on interface `name` ("lo", or an alias "lo:1") of this thread's network namespace.
bool interface_ioctl(const char* name, unsigned long request, ifreq& req) {
  std::strncpy(req.ifr_name, name, IFNAMSIZ - 1);
  tcp::Fd s(::socket(AF_INET, SOCK_DGRAM, 0));
  return s.valid() && ::ioctl(s.get(), request, &req) == 0;
}

bool bring_up(const char* name) {
  ifreq req{};
  if (!interface_ioctl(name, SIOCGIFFLAGS, req)) return false;
  req.ifr_flags = static_cast<short>(req.ifr_flags | IFF_UP);
  return interface_ioctl(name, SIOCSIFFLAGS, req);
}

bool add_ipv4(const char* name, const char* ip) {
  ifreq req{};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  std::memcpy(&req.ifr_addr, &a, sizeof(a));
  return interface_ioctl(name, SIOCSIFADDR, req);
}

}  // namespace

TEST_CASE("a rank whose route to the coordinator appears within the route grace joins") {
  // Right after `clusterctl network apply`, or while a cable's link comes up, its route is a
  // moment away: connect() says ENETUNREACH. Before, the rank failed at once. The world runs
  // in a network namespace of its own (root only; else skipped), whose loopback is all it has:
  // rank 0 listens on all addresses, rank 1 joins at 10.11.12.13, which has no route until
  // it is added to the loopback 500 ms later.
  std::string skipped;
  std::string errors[2];
  int sums[2] = {};
  std::thread world([&] {
    if (::unshare(CLONE_NEWNET) != 0) {
      skipped = std::string("no network namespace of its own: ") + std::strerror(errno);
      return;
    }
    if (!bring_up("lo")) {
      skipped = std::string("cannot bring the namespace's loopback up: ") + std::strerror(errno);
      return;
    }
    std::promise<int> port;
    auto port_future = port.get_future();
    const auto run = [&](Config c, int r) {
      c.timeout = milliseconds(20000);
      try {
        Communicator comm(c);
        int v = r + 1;
        comm.all_reduce(&v, &v, 1, DataType::kI32, ReduceOp::kSum);
        sums[r] = v;
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    };
    std::thread rank0([&] {  // threads started here share the namespace
      Config c = rank_config(0, 2, "0.0.0.0:0");
      c.on_coordinator_listening = [&](int p) { port.set_value(p); };
      run(c, 0);
    });
    if (port_future.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      errors[1] = "rank 0 never listened";
      rank0.join();
      return;
    }
    std::string route_error;
    std::thread route([&] {
      std::this_thread::sleep_for(milliseconds(500));
      if (!add_ipv4("lo:1", "10.11.12.13")) route_error = std::strerror(errno);
    });
    run(rank_config(1, 2, "10.11.12.13:" + std::to_string(port_future.get())), 1);
    route.join();
    rank0.join();
    if (!route_error.empty()) errors[1] += " (adding 10.11.12.13: " + route_error + ")";
  });
  world.join();
  if (!skipped.empty()) {
    MESSAGE("skipped: ", skipped);
    return;
  }
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");  // before, rank 1: "... (Network is unreachable)"
    CHECK(sums[r] == 3);
  }
}

TEST_CASE("rank 0 listens at the coordinator's address even when a listen address has its port") {
  // MLX_HOSTFILE's rank 0 listens on its ring address at port P, and clusterctl launch gives
  // the coordinator at the host's management address, same port P. Before, the ring listener
  // was taken for the coordinator's (the same port): nothing listened at the coordinator, and
  // every rank was refused there until the timeout. 127.0.0.2 stands for the ring address.
  tcp::Fd probe = tcp::listen_on(tcp::resolve("127.0.0.1:0"));
  const int port = tcp::local_address(probe.get()).port();
  probe = tcp::Fd();  // free it for rank 0
  const std::string coord = "127.0.0.1:" + std::to_string(port);
  std::string errors[2];
  int sums[2] = {};
  std::thread rank0([&] {
    Config c = rank_config(0, 2, coord);
    c.timeout = milliseconds(10000);
    c.listen = {"127.0.0.2:" + std::to_string(port)};
    try {
      Communicator comm(c);
      int v = 1;
      comm.all_reduce(&v, &v, 1, DataType::kI32, ReduceOp::kSum);
      sums[0] = v;
    } catch (const std::exception& e) {
      errors[0] = e.what();
    }
  });
  {
    Config c = rank_config(1, 2, coord);
    c.timeout = milliseconds(10000);
    try {
      Communicator comm(c);
      int v = 2;
      comm.all_reduce(&v, &v, 1, DataType::kI32, ReduceOp::kSum);
      sums[1] = v;
    } catch (const std::exception& e) {
      errors[1] = e.what();
    }
  }
  rank0.join();
  for (int r = 0; r < 2; ++r) {
    CAPTURE(r);
    CHECK(errors[r] == "");
    CHECK(sums[r] == 3);
  }
}

}  // namespace cc::comm
#endif
