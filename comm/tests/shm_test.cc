// The shared-memory transport (transport/shm/) as threads of one process: results bit-identical
// to TCP's, rings that wrap and fill, a peer that leaves, transports chosen unalike, and the
// segment's name gone from /dev/shm as soon as the world is up. Separate processes (kill -9,
// SIGSTOP) are in process_test.cc.
#include <doctest/doctest.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "comm/error.h"
#include "comm/reduce.h"
#include "comm/tests/pattern.h"
#include "comm/tests/thread_world.h"
#include "comm/transport/shm/shm_segment.h"
#include "comm/transport/shm/shm_setup.h"
#include "comm/transport/shm/shm_transport.h"
#include "comm/transport/tcp/socket.h"
#include "comm/transport/tcp/tcp_transport.h"

namespace cc::comm::test {
namespace {

// Every collective's results on every rank, as bytes, for one transport.
std::vector<std::vector<unsigned char>> results_over(TransportKind kind, int n) {
  std::mutex mu;
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(n));
  Config base;
  base.transport = kind;
  base.timeout = std::chrono::milliseconds(60000);
  const auto errors = run_threads(
      n,
      [&](Communicator& c) {
        std::vector<unsigned char> mine;
        auto keep = [&](const void* p, size_t bytes) {
          const auto* b = static_cast<const unsigned char*>(p);
          mine.insert(mine.end(), b, b + bytes);
        };
        const auto un = static_cast<size_t>(c.size());
        // One-shot (small) and direct (large) all_reduce, reduce_scatter, all_gather,
        // all_to_all, broadcast, and the same on a split communicator.
        for (size_t count : {size_t{7}, size_t{100}, size_t{300001}}) {
          auto v = random_floats(c.rank(), count, 12345u);
          c.all_reduce(v.data(), v.data(), count, DataType::kF32, ReduceOp::kSum);
          keep(v.data(), count * 4);
        }
        auto in = random_floats(c.rank(), un * 4099, 777u);
        std::vector<float> rs(4099), ag(un * 4099), a2a(un * 4099);
        c.reduce_scatter(in.data(), rs.data(), 4099, DataType::kF32, ReduceOp::kSum);
        keep(rs.data(), rs.size() * 4);
        c.all_gather(rs.data(), ag.data(), 4099, DataType::kF32);
        keep(ag.data(), ag.size() * 4);
        c.all_to_all(in.data(), a2a.data(), 4099, DataType::kF32);
        keep(a2a.data(), a2a.size() * 4);
        c.broadcast(in.data(), in.data(), in.size(), DataType::kF32, c.size() - 1);
        keep(in.data(), in.size() * 4);
        Communicator half = c.split(c.rank() % 2, c.rank());
        auto h = random_floats(c.rank(), 50000, 99u);
        half.all_reduce(h.data(), h.data(), h.size(), DataType::kF32, ReduceOp::kSum);
        keep(h.data(), h.size() * 4);
        std::lock_guard lock(mu);
        out[static_cast<size_t>(c.rank())] = std::move(mine);
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  return out;
}

// The /dev/shm entries this library would have left ("ccshm-<this pid>-..."); empty where
// there is no /dev/shm (macOS keeps POSIX shm out of the file system).
std::vector<std::string> our_segments(pid_t pid = ::getpid()) {
  std::vector<std::string> found;
  DIR* d = ::opendir("/dev/shm");
  if (d == nullptr) return found;
  const std::string prefix = "ccshm-" + std::to_string(pid) + "-";
  while (const dirent* e = ::readdir(d)) {
    if (std::string(e->d_name).rfind(prefix, 0) == 0) found.emplace_back(e->d_name);
  }
  ::closedir(d);
  return found;
}

// n ranks over a hand-made segment with rings of `ring` bytes (threads of this process), each
// pair joined by a socket pair; raw[r] is rank r's transport (the Communicator owns it).
struct HandWorld {
  std::vector<std::unique_ptr<Transport>> ts;
  std::vector<shm::ShmTransport*> raw;
  shm::SegmentHeader* header = nullptr;  // the shared header (mapped while ts live)
};
HandWorld hand_world(int n, size_t ring, const shm::ShmOptions& opts) {
  std::vector<shm::Segment> segs;
  segs.push_back(shm::Segment::create(n, ring));
  REQUIRE(segs[0].mapped());
  unsigned char nonce[16];
  std::memcpy(nonce, segs[0].header().nonce, 16);
  for (int r = 1; r < n; ++r) segs.push_back(shm::Segment::open(segs[0].name(), n, ring, nonce));
  const auto un = static_cast<size_t>(n);
  std::vector<std::vector<tcp::Fd>> socks(un);
  for (auto& v : socks) v.resize(un);
  for (size_t a = 0; a < un; ++a) {
    for (size_t b = a + 1; b < un; ++b) {
      int sv[2];
      REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
      socks[a][b] = tcp::Fd(sv[0]);
      socks[b][a] = tcp::Fd(sv[1]);
    }
  }
  std::vector<int> all(un);
  for (int r = 0; r < n; ++r) all[static_cast<size_t>(r)] = r;
  HandWorld w;
  w.header = &segs[0].header();
  for (int r = 0; r < n; ++r) {
    auto t = std::make_unique<shm::ShmTransport>(r, n, all, std::move(segs[static_cast<size_t>(r)]),
                                                 std::move(socks[static_cast<size_t>(r)]),
                                                 nullptr, opts);
    w.raw.push_back(t.get());
    w.ts.push_back(std::move(t));
  }
  return w;
}

// Every collective over a hand world, as bytes per rank, with each rank's single-copy bytes.
struct Outcome {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<uint64_t> single_copy;
};
Outcome collectives_over(HandWorld w, int n) {
  std::mutex mu;
  Outcome o;
  o.bytes.resize(static_cast<size_t>(n));
  o.single_copy.resize(static_cast<size_t>(n));
  const std::vector<shm::ShmTransport*> raw = w.raw;
  const auto errors = run_threads_over(std::move(w.ts), [&](Communicator& c) {
    std::vector<unsigned char> mine;
    auto keep = [&](const void* p, size_t bytes) {
      const auto* b = static_cast<const unsigned char*>(p);
      mine.insert(mine.end(), b, b + bytes);
    };
    const auto un = static_cast<size_t>(c.size());
    for (const DataType t : {DataType::kF32, DataType::kBF16, DataType::kI8, DataType::kI64}) {
      for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        // One-shot (in place and out of place), direct and, at n = 4, the ring.
        for (const size_t count : {size_t{40000}, size_t{70001}, size_t{600001}}) {
          const size_t e = size_of(t);
          std::vector<unsigned char> in(count * e), got(count * e), want(count * e);
          fill(t, op, c.rank(), in.data(), count);
          expected(t, op, c.size(), want.data(), count);
          c.all_reduce(in.data(), got.data(), count, t, op);
          CHECK_MESSAGE(compare(t, got.data(), want.data(), count).empty(), "out of place");
          c.all_reduce(in.data(), in.data(), count, t, op);
          CHECK_MESSAGE(compare(t, in.data(), want.data(), count).empty(), "in place");
          keep(got.data(), got.size());
        }
      }
    }
    auto in = random_floats(c.rank(), un * 70001, 777u);
    std::vector<float> rs(70001), ag(un * 70001), a2a(un * 70001);
    c.reduce_scatter(in.data(), rs.data(), 70001, DataType::kF32, ReduceOp::kSum);
    keep(rs.data(), rs.size() * 4);
    c.all_gather(rs.data(), ag.data(), 70001, DataType::kF32);
    keep(ag.data(), ag.size() * 4);
    c.all_to_all(in.data(), a2a.data(), 70001, DataType::kF32);
    keep(a2a.data(), a2a.size() * 4);
    c.broadcast(in.data(), in.data(), in.size(), DataType::kF32, c.size() - 1);
    keep(in.data(), in.size() * 4);
    std::lock_guard lock(mu);
    o.bytes[static_cast<size_t>(c.rank())] = std::move(mine);
    o.single_copy[static_cast<size_t>(c.rank())] =
        raw[static_cast<size_t>(c.rank())]->single_copy_bytes();
  });
  for (const auto& e : errors) FAIL_CHECK(e);
  return o;
}

}  // namespace

TEST_CASE("shm: every collective's results are bit-identical to TCP's, n=2,3,4") {
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    const auto tcp = results_over(TransportKind::kTcp, n);
    const auto shm = results_over(TransportKind::kShm, n);
    for (int r = 0; r < n; ++r) {
      CAPTURE(r);
      REQUIRE(!tcp[static_cast<size_t>(r)].empty());
      CHECK(shm[static_cast<size_t>(r)] == tcp[static_cast<size_t>(r)]);
    }
  }
}

TEST_CASE("shm: messages of 0 B to 3 MiB wrap the ring, a sender runs a ring ahead and waits") {
  // Sizes around the 16-byte header, the quarter-ring piece and the 1 MiB ring itself.
  const std::vector<size_t> sizes{0,       1,       15,      16,          17,      4095,
                                  4096,    65537,   262143,  262144,      262145,  (1u << 20) - 16,
                                  1u << 20, (1u << 20) + 1, 3u << 20, 7,  0,       (3u << 20) + 5};
  std::atomic<bool> late_ok{true};
  Config base;
  base.transport = TransportKind::kShm;
  base.timeout = std::chrono::milliseconds(30000);
  const auto errors = run_threads(
      2,
      [&](Communicator& c) {
        if (c.rank() == 0) {
          for (size_t round = 0; round < 3; ++round) {
            for (size_t s : sizes) {
              std::vector<unsigned char> m(s);
              for (size_t i = 0; i < s; ++i) m[i] = static_cast<unsigned char>(i * 31 + s + round);
              c.send(m.data(), s, 1);
            }
          }
        } else {
          // Post nothing for 300 ms: rank 0 fills the ring and must wait for space.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          for (size_t round = 0; round < 3; ++round) {
            for (size_t s : sizes) {
              std::vector<unsigned char> m(s + 1, 0xee);
              c.recv(m.data(), s, 0);
              for (size_t i = 0; i < s; ++i) {
                if (m[i] != static_cast<unsigned char>(i * 31 + s + round)) {
                  late_ok = false;
                  break;
                }
              }
              if (m[s] != 0xee) late_ok = false;  // not one byte past the buffer
            }
          }
        }
        c.barrier();
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  CHECK(late_ok.load());
}

TEST_CASE("shm: reductions fold straight out of a small ring that wraps, every type, exact") {
  // Two ranks over a hand-made segment with 4 KiB rings (pieces of 1 KiB), so every large
  // message wraps the ring many times; a 5-byte message before each call shifts where the next
  // one starts (padding realigns it). The direct all_reduce at n = 2 folds the peer's half
  // straight out of the ring (irecv_reduce); the results must be exact for every type.
  constexpr size_t kRing = 4096;
  HandWorld w = hand_world(2, kRing, shm::ShmOptions{});
  const std::vector<shm::ShmTransport*> raw = w.raw;
  std::mutex mu;
  std::vector<std::string> wrong;
  uint64_t folded[2] = {0, 0};
  const auto errors = run_threads_over(std::move(w.ts), [&](Communicator& c) {
    for (const DataType t : {DataType::kF32, DataType::kF64, DataType::kF16, DataType::kBF16,
                             DataType::kI8, DataType::kI16, DataType::kI32, DataType::kI64}) {
      for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        // 70001 elements: the direct algorithm for every type (over one-shot's 64 KiB).
        for (const size_t count : {size_t{70001}, size_t{200003}}) {
          const size_t e = size_of(t);
          std::vector<unsigned char> odd(5, 0x5a);
          if (c.rank() == 0) {
            c.send(odd.data(), odd.size(), 1);
          } else {
            c.recv(odd.data(), odd.size(), 0);
          }
          std::vector<unsigned char> in(count * e), got(count * e), want(count * e);
          fill(t, op, c.rank(), in.data(), count);
          expected(t, op, 2, want.data(), count);
          c.all_reduce(in.data(), got.data(), count, t, op);
          const std::string diff = compare(t, got.data(), want.data(), count);
          if (!diff.empty()) {
            std::lock_guard lock(mu);
            wrong.push_back("rank " + std::to_string(c.rank()) + " type " +
                            std::to_string(static_cast<int>(t)) + " op " +
                            std::to_string(static_cast<int>(op)) + " count " +
                            std::to_string(count) + ": " + diff);
          }
        }
      }
    }
    folded[static_cast<size_t>(c.rank())] = raw[static_cast<size_t>(c.rank())]->folded_bytes();  // the transport ends with the body
  });
  for (const auto& e : errors) FAIL_CHECK(e);
  for (const auto& line : wrong) FAIL_CHECK(line);
  // This rank's shard of every call came folded (about half of it: the peer's contribution):
  // at least the f32 calls' 2 x (70001 + 200003) / 2 x 4 bytes, less a rounding.
  for (const uint64_t f : folded) CHECK(f >= (70001 + 200003) * 4 - 64);
}

TEST_CASE("shm: the segment's name is gone from /dev/shm once the world is up") {
  std::atomic<int> checked{0};
  std::vector<std::string> seen;
  std::mutex mu;
  Config base;
  base.transport = TransportKind::kShm;
  const auto errors = run_threads(
      3,
      [&](Communicator& c) {
        CHECK(c.transport_name() == "shm (3 ranks on this host)");
        c.barrier();
        {
          std::lock_guard lock(mu);
          for (auto& s : our_segments()) seen.push_back(s);
        }
        ++checked;
        int token = c.rank(), sum = 0;
        c.all_reduce(&token, &sum, 1, DataType::kI32, ReduceOp::kSum);
        CHECK(sum == 3);
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  CHECK(checked.load() == 3);
  CHECK(seen.empty());
  CHECK(our_segments().empty());
}

TEST_CASE("shm: a rank that closes its communicator while its peer expects data is named") {
  std::mutex mu;
  std::vector<std::string> msgs;
  Config base;
  base.transport = TransportKind::kShm;
  base.timeout = std::chrono::milliseconds(10000);
  const auto errors = run_threads(
      2,
      [&](Communicator& c) {
        if (c.rank() == 1) return;  // its Communicator closes (BYE) without sending
        int64_t got = 0;
        try {
          c.recv(&got, 8, 1);
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          msgs.emplace_back(e.what());
          CHECK(e.kind() == ErrorKind::kPeerLost);
        }
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  REQUIRE(msgs.size() == 1);
  CHECK(msgs[0].find("lost rank 1: it closed its communicator while this rank still expected "
                     "data") != std::string::npos);
}

TEST_CASE("shm: data sent before a clean close is still received") {
  Config base;
  base.transport = TransportKind::kShm;
  std::atomic<int64_t> got{0};
  const auto errors = run_threads(
      2,
      [&](Communicator& c) {
        if (c.rank() == 1) {
          const int64_t v = 4242;
          c.send(&v, 8, 0);  // completes once in the ring; then the communicator closes
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        int64_t v = 0;
        c.recv(&v, 8, 1);
        got = v;
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  CHECK(got.load() == 4242);
}

TEST_CASE("shm: CLUSTERCOMM_TRANSPORT=shm on one rank and tcp on another fails naming it") {
  // run_threads gives every rank the same config: form this mixed world by hand.
  std::promise<int> port;
  std::string msg0, msg1;
  ErrorKind kind0 = ErrorKind::kSystem;
  std::thread rank0([&] {
    Config c;
    c.rank = 0;
    c.size = 2;
    c.coordinator = "127.0.0.1:0";
    c.transport = TransportKind::kShm;
    c.timeout = std::chrono::milliseconds(5000);
    c.on_coordinator_listening = [&](int p) { port.set_value(p); };
    try {
      Communicator comm(c);
      msg0 = "no error";
    } catch (const Error& e) {
      msg0 = e.what();
      kind0 = e.kind();
    }
  });
  auto f = port.get_future();
  REQUIRE(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  Config c;
  c.rank = 1;
  c.size = 2;
  c.coordinator = "127.0.0.1:" + std::to_string(f.get());
  c.transport = TransportKind::kTcp;
  c.timeout = std::chrono::milliseconds(5000);
  try {
    Communicator comm(c);
    comm.barrier();
    msg1 = "no error";
  } catch (const Error& e) {
    msg1 = e.what();
  }
  rank0.join();
  // The coordinator compares every rank's choice with its own at start-up: both ranks fail
  // with the same message (rank 1 used to get through and then read only "Connection reset by
  // peer").
  CHECK(kind0 == ErrorKind::kWorld);
  for (const std::string& m : {msg0, msg1}) {
    CAPTURE(m);
    CHECK(m.find("rank 1 (from 127.0.0.1") != std::string::npos);
    CHECK(m.find("was started with CLUSTERCOMM_TRANSPORT=tcp but rank 0 with shm: every rank "
                 "must choose the same transport") != std::string::npos);
  }
}

TEST_CASE("shm: a segment with another nonce is refused, the last rank to map it unlinks it") {
  shm::Segment s = shm::Segment::create(3, 4096);
  REQUIRE(s.mapped());
  const std::string name = s.name();
  CHECK(name.rfind("/ccshm-", 0) == 0);
  CHECK(name.size() <= 31);  // macOS: PSHMNAMLEN
  unsigned char nonce[16];
  std::memcpy(nonce, s.header().nonce, 16);
  nonce[3] ^= 1;
  try {
    shm::Segment::open(name, 3, 4096, nonce);
    FAIL("a wrong nonce was accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kProtocol);
    CHECK(std::string(e.what()).find(name) != std::string::npos);
  }
  nonce[3] ^= 1;
  CHECK_THROWS_AS(shm::Segment::open(name, 2, 4096, nonce), Error);  // another layout
  CHECK(s.header().mapped_ranks.load() == 1);  // refused opens do not count
  shm::Segment second = shm::Segment::open(name, 3, 4096, nonce);
  CHECK(s.header().mapped_ranks.load() == 2);
#ifdef __linux__
  CHECK(our_segments().size() == 1);  // one of three still to map it: the name stays
#endif
  // The third: the name goes now, without the creator (as when it was killed after its offer).
  shm::Segment third = shm::Segment::open(name, 3, 4096, nonce);
  CHECK(s.header().mapped_ranks.load() == 3);
  CHECK(our_segments().empty());
  try {
    shm::Segment::open(name, 3, 4096, nonce);
    FAIL("an unlinked name still opened");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::kSystem);
    CHECK(std::string(e.what()).find("shm_open") != std::string::npos);
  }
  s.unlink();  // the creator's own unlink finds it gone: harmless
  CHECK(our_segments().empty());
  // The memory is still shared among the mappings.
  s.header().abort_word.store(42);
  CHECK(third.header().abort_word.load() == 42);
}

#ifdef __linux__
constexpr bool kHasDevShm = true;
#else
constexpr bool kHasDevShm = false;  // macOS keeps POSIX shm out of the file system
#endif

// kill -9 of the creator after its offer, while one local rank has mapped the segment and the
// third never answers (stopped): the name must not outlive the job. The creator is a forked
// process running the real setup; rank 1 is a thread here; rank 2 a socket nobody reads.
TEST_CASE("shm: the creator killed after its offer leaves no name in /dev/shm" *
          doctest::skip(!kHasDevShm)) {
  int s01[2], s02[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, s01) == 0);
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, s02) == 0);
  shm::LocalGroup group;
  group.ranks = {0, 1, 2};
  group.wanted = true;
  group.host_of = {0, 0, 0};
  Config cfg;
  cfg.size = 3;
  cfg.timeout = std::chrono::milliseconds(30000);
  const pid_t creator = ::fork();
  REQUIRE(creator >= 0);
  if (creator == 0) {
    ::close(s01[1]);
    ::close(s02[1]);
    std::vector<std::vector<tcp::Fd>> conns(3);
    conns[1].emplace_back(s01[0]);
    conns[2].emplace_back(s02[0]);
    cfg.rank = 0;
    std::string why;
    try {
      shm::form_segment(cfg, group, conns, why);
    } catch (...) {
    }
    ::_exit(0);
  }
  ::close(s01[0]);
  ::close(s02[0]);
  tcp::Fd silent_rank2(s02[1]);
  std::vector<std::vector<tcp::Fd>> conns(3);
  conns[0].emplace_back(s01[1]);
  auto rank1 = std::async(std::launch::async, [&] {
    Config mine = cfg;
    mine.rank = 1;
    std::string why;
    try {
      shm::form_segment(mine, group, conns, why);
      return std::string("no error");
    } catch (const Error& e) {
      return std::string(e.what());
    }
  });
  // Wait until rank 1 has mapped the creator's segment (2 of 3 mapped: the name stays).
  bool mapped = false;
  for (int i = 0; i < 2000 && !mapped; ++i) {
    for (const std::string& n : our_segments(creator)) {
      const int fd = ::shm_open(("/" + n).c_str(), O_RDONLY, 0);
      if (fd < 0) continue;
      void* p = ::mmap(nullptr, sizeof(shm::SegmentHeader), PROT_READ, MAP_SHARED, fd, 0);
      ::close(fd);
      if (p == MAP_FAILED) continue;
      mapped = static_cast<const shm::SegmentHeader*>(p)->mapped_ranks.load() == 2;
      ::munmap(p, sizeof(shm::SegmentHeader));
    }
    if (!mapped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(mapped);
  CHECK(our_segments(creator).size() == 1);
  REQUIRE(::kill(creator, SIGKILL) == 0);
  int status = 0;
  REQUIRE(::waitpid(creator, &status, 0) == creator);
  CHECK(WIFSIGNALED(status));
  const std::string err = rank1.get();
  CHECK(err.find("rank 0") != std::string::npos);
  CHECK(our_segments(creator).empty());
}

namespace {

// A connected loopback TCP pair.
std::pair<tcp::Fd, tcp::Fd> loopback_pair() {
  tcp::Fd listener = tcp::listen_on(tcp::resolve("127.0.0.1:0"));
  const tcp::Address there = tcp::local_address(listener.get());
  tcp::Fd ours =
      tcp::connect_to(there, nullptr, Clock::now() + std::chrono::seconds(5), "the test listener");
  tcp::Fd theirs;
  for (int i = 0; i < 500 && !theirs.valid(); ++i) {
    theirs = tcp::Fd(::accept(listener.get(), nullptr, nullptr));
    if (!theirs.valid()) ::usleep(1000);
  }
  REQUIRE(theirs.valid());
  return {std::move(ours), std::move(theirs)};
}

// A shared-memory wait on a request of this host drives the cable transport with poll(); what
// that moves is this rank's movement too: it keeps the wait going (the stall timeout bounds
// silence on all of the rank's connections) and is published on the rank's board for the
// ranks of its host. Rank 0 of hosts {0, 1} and {2}, built by hand: it waits for a message
// from rank 1 (which never comes) with a timeout of 300 ms while rank 2 (another thread, TCP)
// sends it ten 64 KiB messages 60 ms apart. Before, the poll's movement counted nowhere: the
// wait timed out after 300 ms and the board's moved_ns stayed 0.
TEST_CASE(
    "shm + tcp: cable movement seen by a shared-memory wait's poll() counts and is "
    "published") {
  using namespace std::chrono;
  shm::Segment seg = shm::Segment::create(2, 4096);
  const shm::SegmentHeader* header = &seg.header();  // the mapping moves with the Segment
  int pair[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
  tcp::Fd far_local(pair[1]);  // rank 1's end: open, silent
  std::vector<tcp::Fd> socks(3);
  socks[1] = tcp::Fd(pair[0]);
  std::vector<std::vector<tcp::Fd>> conns0(3), conns2(3);
  for (int k = 0; k < 2; ++k) {  // a data connection, then the control connection
    auto p = loopback_pair();
    conns0[2].push_back(std::move(p.first));
    conns2[0].push_back(std::move(p.second));
  }
  tcp::TcpOptions o;
  o.close_timeout = milliseconds(500);
  auto cable0 = std::make_unique<tcp::TcpTransport>(0, 3, std::move(conns0), o);
  shm::ShmTransport t0(0, 3, {0, 1}, std::move(seg), std::move(socks), std::move(cable0),
                       shm::ShmOptions{});
  t0.set_stall_timeout(milliseconds(300));
  constexpr int kMessages = 10;
  std::vector<std::vector<char>> in(kMessages, std::vector<char>(64 * 1024));
  std::vector<Request> cable(kMessages);
  for (size_t i = 0; i < kMessages; ++i) t0.irecv(2, in[i].data(), in[i].size(), cable[i]);
  std::string rank2_error;
  std::thread rank2([&conns2, &o, &rank2_error] {
    try {
      tcp::TcpTransport t2(2, 3, std::move(conns2), o);
      std::vector<char> block(64 * 1024, 'x');
      for (int i = 0; i < kMessages; ++i) {
        std::this_thread::sleep_for(milliseconds(60));
        Request r;
        t2.isend(0, block.data(), block.size(), r);
        t2.wait(r, Clock::now() + seconds(10));
      }
    } catch (const Error& e) {
      rank2_error = e.what();  // rank 0 gave up early (the bug)
    }
  });
  int v = 0;
  Request local;
  t0.irecv(1, &v, sizeof v, local);
  const auto started = steady_clock::now();
  std::string what = "no error";
  try {
    t0.wait(local, Clock::now() + milliseconds(300));
  } catch (const Error& e) {
    what = std::string(to_string(e.kind())) + ": " + e.what();
  }
  const auto took = duration_cast<milliseconds>(steady_clock::now() - started).count();
  rank2.join();
  const int64_t moved_ns = header->beats[0].board.moved_ns.load();
  CAPTURE(what);
  CAPTURE(took);
  CAPTURE(rank2_error);
  CHECK(rank2_error.empty());
  CHECK(what.rfind("timeout: clustercomm: timed out waiting for rank 1 (", 0) == 0);
  size_t received = 0;
  for (const Request& r : cable) received += r.done() ? 1u : 0u;
  CHECK(received == kMessages);
  // The last message came at about 600 ms; the wait ended the timeout after it.
  CHECK(took >= 800);
  const auto since_start =
      duration_cast<milliseconds>(nanoseconds(moved_ns) - started.time_since_epoch()).count();
  CAPTURE(since_start);
  CHECK(since_start >= 500);
}

}  // namespace

// Crowded worlds (more ranks than cores) all-reduce large messages in a chain that folds in
// rank order (all_reduce_chain.cc); uncrowded ones take the direct algorithm. The two must give
// the same bits as reduce() over all ranks' inputs in rank order, for random data of every type
// (f16/bf16 keep the direct algorithm: reduce() rounds them once). Small chunks and a window of
// 2 make many chunks, the last one short; in place and out of place. folded_bytes() shows the
// chain ran: ranks 1..n-1 fold every byte of the chain's calls straight out of the rings.
TEST_CASE("shm: crowded worlds of 2 ranks a core all-reduce small messages one-shot, more a star") {
  // n = 4 ranks; received messages per rank tell the algorithm: one-shot takes n - 1 a call on
  // every rank, the star n - 1 on rank 0 and 1 elsewhere. 400 B: (n - 1) x 400 <= 4 KiB, so
  // one-shot at 2 ranks a core; 8000 B: a star whenever crowded. Both calls, in place and out
  // of place, must give the same bits in every world (random floats: sums depend on the order).
  constexpr int n = 4;
  constexpr size_t kCounts[] = {100, 2000};
  std::vector<float> want[2];
  for (size_t k = 0; k < 2; ++k) {
    std::vector<std::vector<float>> ins;
    std::vector<const void*> srcs;
    for (int r = 0; r < n; ++r) ins.push_back(random_floats(r, kCounts[k], 4242u));
    for (const auto& v : ins) srcs.push_back(v.data());
    want[k].resize(kCounts[k]);
    reduce(DataType::kF32, ReduceOp::kSum, want[k].data(), srcs.data(), n, kCounts[k]);
  }
  // 0: uncrowded; 1: crowded, 2 ranks a core; 2: crowded, 3 ranks a core.
  for (int world = 0; world < 3; ++world) {
    CAPTURE(world);
    shm::ShmOptions o;
    o.crowded = world > 0;
    o.ranks_per_core = world == 2 ? 3 : 2;
    HandWorld w = hand_world(n, 64 * 1024, o);
    const std::vector<shm::ShmTransport*> raw = w.raw;
    std::mutex mu;
    std::vector<std::string> bad;
    uint64_t received[2][n] = {};
    const auto errors = run_threads_over(std::move(w.ts), [&](Communicator& c) {
      const auto r = static_cast<size_t>(c.rank());
      for (size_t k = 0; k < 2; ++k) {
        const uint64_t before = raw[r]->received_messages();
        std::vector<float> in = random_floats(c.rank(), kCounts[k], 4242u), out(kCounts[k]);
        c.all_reduce(in.data(), out.data(), kCounts[k], DataType::kF32, ReduceOp::kSum);
        c.all_reduce(in.data(), in.data(), kCounts[k], DataType::kF32, ReduceOp::kSum);
        std::lock_guard lock(mu);
        received[k][r] = raw[r]->received_messages() - before;
        if (std::memcmp(out.data(), want[k].data(), out.size() * 4) != 0 ||
            std::memcmp(in.data(), want[k].data(), in.size() * 4) != 0) {
          bad.push_back("rank " + std::to_string(r) + ", " + std::to_string(kCounts[k]) +
                        " floats: not the rank-order sum's bits");
        }
      }
    });
    for (const auto& e : errors) FAIL_CHECK(e);
    for (const auto& b : bad) FAIL_CHECK(b);
    for (size_t k = 0; k < 2; ++k) {
      CAPTURE(kCounts[k]);
      const bool star = world == 2 || (world == 1 && k == 1);
      for (size_t r = 0; r < n; ++r) {
        CAPTURE(r);
        CHECK(received[k][r] == (star && r != 0 ? 2u : 2u * (n - 1)));
      }
    }
  }
}

TEST_CASE("shm: crowded worlds all-reduce large messages in a rank-order chain, bit-identical") {
  constexpr size_t kCount = 50001;
  const DataType types[] = {DataType::kF32, DataType::kF64, DataType::kI32, DataType::kF16};
  auto input = [](DataType t, int rank) {
    std::vector<unsigned char> v(kCount * size_of(t));
    uint32_t x = 12345u + static_cast<uint32_t>(rank) * 7919u + static_cast<uint32_t>(t) * 31u;
    for (auto& b : v) {
      x = x * 1664525u + 1013904223u;
      b = static_cast<unsigned char>(x >> 24);
    }
    if (t == DataType::kF32) {  // finite values, so sums depend on the order
      const auto f = random_floats(rank, kCount, 99u);
      std::memcpy(v.data(), f.data(), v.size());
    }
    return v;
  };
  Config base;
  base.tuning.chunk_bytes = 16 * 1024;
  base.tuning.window_chunks = 2;
  for (int n : {3, 4}) {
    CAPTURE(n);
    const auto un = static_cast<size_t>(n);
    // 0: uncrowded; 1: crowded; 2: crowded with single copy from 4 KiB (where it works here)
    const int runs = shm::peer_memory_readable() ? 3 : 2;
    std::vector<std::vector<unsigned char>> got[3];
    std::vector<uint64_t> folded[3], single[3];
    for (int run = 0; run < runs; ++run) {
      shm::ShmOptions o;
      o.crowded = run > 0;
      o.single_copy_min = run == 2 ? 4096 : 0;
      HandWorld w = hand_world(n, 64 * 1024, o);
      const std::vector<shm::ShmTransport*> raw = w.raw;
      auto& results = got[run];
      results.resize(un);
      folded[run].resize(un);
      single[run].resize(un);
      std::mutex mu;
      const auto errors = run_threads_over(
          std::move(w.ts),
          [&](Communicator& c) {
            std::vector<unsigned char> mine;
            for (const DataType t : types) {
              std::vector<unsigned char> in = input(t, c.rank()), out(in.size());
              c.all_reduce(in.data(), out.data(), kCount, t, ReduceOp::kSum);
              c.all_reduce(in.data(), in.data(), kCount, t, ReduceOp::kSum);
              CHECK_MESSAGE(in == out, "in place differs from out of place");
              mine.insert(mine.end(), out.begin(), out.end());
            }
            std::lock_guard lock(mu);
            results[static_cast<size_t>(c.rank())] = std::move(mine);
            folded[run][static_cast<size_t>(c.rank())] =
                raw[static_cast<size_t>(c.rank())]->folded_bytes();
            single[run][static_cast<size_t>(c.rank())] =
                raw[static_cast<size_t>(c.rank())]->single_copy_bytes();
          },
          base);
      for (const auto& e : errors) FAIL_CHECK(e);
    }
    std::vector<unsigned char> want;
    for (const DataType t : types) {
      std::vector<std::vector<unsigned char>> ins;
      std::vector<const void*> srcs;
      for (int r = 0; r < n; ++r) ins.push_back(input(t, r));
      for (const auto& v : ins) srcs.push_back(v.data());
      std::vector<unsigned char> sum(kCount * size_of(t));
      reduce(t, ReduceOp::kSum, sum.data(), srcs.data(), un, kCount);
      want.insert(want.end(), sum.begin(), sum.end());
    }
    // Three of the four types by chain, each twice (in place and out of place).
    const uint64_t chained = 2 * kCount * (4 + 8 + 4);
    for (size_t r = 0; r < un; ++r) {
      CAPTURE(r);
      for (int run = 0; run < runs; ++run) {
        CAPTURE(run);
        CHECK(got[run][r] == want);
        CHECK(folded[run][r] == (run == 0 || r == 0 ? 0 : chained));
        CHECK((single[run][r] > 0) == (run == 2));
      }
    }
  }
}

TEST_CASE("shm: single copy: collectives read the sender's buffer, bit-identical to the rings" *
          doctest::skip(!shm::peer_memory_readable())) {
  // From 4 KiB up, collective messages go by reference (the receiver reads the sender's buffer)
  // through 64 KiB rings; the same calls with single copy off go through the rings. Every
  // reduction is checked exact, everything else against the rings, and every rank must have
  // received by single copy (and none with it off).
  for (int n : {2, 3, 4}) {
    CAPTURE(n);
    shm::ShmOptions on;
    on.single_copy_min = 4096;
    const Outcome ref = collectives_over(hand_world(n, 64 * 1024, on), n);
    const Outcome rings = collectives_over(hand_world(n, 64 * 1024, shm::ShmOptions{}), n);
    for (size_t r = 0; r < static_cast<size_t>(n); ++r) {
      CAPTURE(r);
      REQUIRE(!rings.bytes[r].empty());
      CHECK(ref.bytes[r] == rings.bytes[r]);
      CHECK(ref.single_copy[r] >= 600001u * 4);
      CHECK(rings.single_copy[r] == 0);
    }
  }
}

TEST_CASE("shm: single copy: a peer that cannot read this rank's memory gets the rings" *
          doctest::skip(!shm::peer_memory_readable())) {
  // Rank 1's nonce is published at a wrong address before any wait, so rank 0's proof fails:
  // rank 1 sends to rank 0 through the rings, while rank 0 still sends to rank 1 by reference.
  shm::ShmOptions on;
  on.single_copy_min = 4096;
  HandWorld w = hand_world(2, 64 * 1024, on);
  w.header->reach[1].nonce_at.store(0);
  const Outcome o = collectives_over(std::move(w), 2);
  CHECK(o.single_copy[0] == 0);
  CHECK(o.single_copy[1] >= 600001u * 4);
  const Outcome rings = collectives_over(hand_world(2, 64 * 1024, shm::ShmOptions{}), 2);
  CHECK(o.bytes == rings.bytes);
}

TEST_CASE("shm: a point-to-point send is buffered as before: two ranks that each send 512 KiB "
          "first both finish") {
  // With single copy on, not for send: a send to a peer that is itself sending must not wait
  // for that peer's receive (it would wait the whole timeout).
  Config base;
  base.transport = TransportKind::kShm;
  base.tuning.shm_single_copy_min = 64 * 1024;
  base.timeout = std::chrono::milliseconds(5000);
  const auto errors = run_threads(
      2,
      [&](Communicator& c) {
        std::vector<unsigned char> out(512 * 1024, static_cast<unsigned char>(c.rank() + 1));
        std::vector<unsigned char> in(out.size());
        c.barrier();  // each rank has proven it can read the other's memory (its first wait)
        c.barrier();
        c.send(out.data(), out.size(), 1 - c.rank());
        c.recv(in.data(), in.size(), 1 - c.rank());
        CHECK(in == std::vector<unsigned char>(out.size(),
                                               static_cast<unsigned char>(2 - c.rank())));
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
}

TEST_CASE("shm: read_peer_memory reads another process's buffer, and names a gone one" *
          doctest::skip(!shm::peer_memory_readable())) {
  int to_parent[2], to_child[2];
  REQUIRE(::pipe(to_parent) == 0);
  REQUIRE(::pipe(to_child) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::vector<unsigned char> buf(300000);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 3);
    const uint64_t at = reinterpret_cast<uintptr_t>(buf.data());
    (void)!::write(to_parent[1], &at, sizeof at);
    char go;
    (void)!::read(to_child[0], &go, 1);
    ::_exit(0);
  }
  uint64_t at = 0;
  REQUIRE(::read(to_parent[0], &at, sizeof at) == static_cast<ssize_t>(sizeof at));
  std::vector<unsigned char> got(300000);
  CHECK(shm::read_peer_memory(child, got.data(), at, got.size()) == 0);
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) wrong += got[i] != static_cast<unsigned char>(i * 7 + 3);
  CHECK(wrong == 0);
  CHECK(shm::read_peer_memory(child, got.data(), 0, 16) == EFAULT);  // nothing mapped there
  (void)!::write(to_child[1], "x", 1);
  ::waitpid(child, nullptr, 0);
  CHECK(shm::read_peer_memory(child, got.data(), at, 16) == ESRCH);
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
}

}  // namespace cc::comm::test
