// Communicator::split as threads over loopback TCP (and over verbs in the Soft-RoCE guest,
// through the rdma suite's "collectives as threads*n=N" filter): tensor-parallel groups and a
// pipeline pair inside one world, used in turn with the world, results checked exactly; keys
// that reorder ranks; an empty communicator; nested splits outliving their parent; messages
// of two communicators that meet are refused, not mixed.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "comm/tests/fake_link.h"
#include "comm/tests/thread_world.h"

namespace cc::comm::test {
namespace {

struct SplitFailures {
  std::mutex mu;
  std::vector<std::string> lines;
  void expect(bool ok, int rank, const std::string& what) {
    if (ok) return;
    std::lock_guard lock(mu);
    if (lines.size() < 20) lines.push_back("rank " + std::to_string(rank) + ": " + what);
  }
};

// Step `step`'s value of element i on world rank w.
int64_t tp_value(int w, int step, size_t i) {
  return (w + 1) * 1000 + step * 10 + static_cast<int64_t>(i % 7);
}

void tp_pp_world(Communicator& world, SplitFailures& f) {
  const int w = world.rank();
  // TP groups of 2: {0, 1} and {2, 3}. PP pairs {0, 2} and {1, 3}, keyed by -rank so the
  // higher world rank is PP rank 0. Rank 3 is in no third group: an empty communicator.
  Communicator tp = world.split(w / 2, w);
  Communicator pp = world.split(w % 2, -w);
  Communicator trio = world.split(w == 3 ? kNoColor : 7, 0);
  f.expect(tp.size() == 2 && tp.rank() == w % 2, w, "tp rank/size");
  f.expect(pp.size() == 2 && pp.rank() == (w < 2 ? 1 : 0), w, "pp rank/size (keys -rank)");
  f.expect(pp.world_rank(0) == (w % 2) + 2 && pp.world_rank(1) == w % 2, w, "pp world ranks");
  f.expect(tp.world_rank(0) == (w / 2) * 2 && tp.world_rank(1) == (w / 2) * 2 + 1, w,
           "tp world ranks");
  f.expect(tp.transport_name() == world.transport_name(), w, "tp transport is the world's");
  if (w == 3) {
    f.expect(!trio.valid() && trio.size() == 0 && trio.rank() == -1, w, "empty communicator");
    try {
      trio.barrier();
      f.expect(false, w, "barrier on an empty communicator did not throw");
    } catch (const Error& e) {
      f.expect(e.kind() == ErrorKind::kInvalidArgument, w, "empty: kind");
    }
  } else {
    f.expect(trio.valid() && trio.size() == 3 && trio.rank() == w, w, "trio rank/size");
  }
  // Every rank agrees on each communicator's id, and the ids differ (0 is the world).
  const uint64_t ids[2] = {tp.context(), pp.context()};
  uint64_t all_ids[8] = {};
  world.all_gather(ids, all_ids, 2, DataType::kU64);
  for (int q = 0; q < 4; ++q) {
    const size_t uq = static_cast<size_t>(q);
    f.expect(all_ids[2 * uq] == all_ids[0] && all_ids[2 * uq + 1] == all_ids[1], w,
             "context ids differ between ranks");
  }
  f.expect(all_ids[0] != 0 && all_ids[1] != 0 && all_ids[0] != all_ids[1], w,
           "tp and pp share a context or use the world's");

  for (int step = 0; step < 4; ++step) {
    // TP all_reduce (small: one-shot; large: direct), then the same count on the world, so
    // the pair (0, 1) carries messages of equal size of both communicators back to back.
    for (size_t count : {size_t{3}, size_t{70001}}) {
      std::vector<int64_t> x(count), sum(count);
      for (size_t i = 0; i < count; ++i) x[i] = tp_value(w, step, i);
      tp.all_reduce(x.data(), sum.data(), count, DataType::kI64, ReduceOp::kSum);
      const int a = (w / 2) * 2, b = a + 1;
      bool ok = true;
      for (size_t i = 0; i < count; ++i)
        ok = ok && sum[i] == tp_value(a, step, i) + tp_value(b, step, i);
      f.expect(ok, w,
               "tp all_reduce step " + std::to_string(step) + " count " + std::to_string(count));
      world.all_reduce(x.data(), sum.data(), count, DataType::kI64, ReduceOp::kSum);
      ok = true;
      for (size_t i = 0; i < count; ++i) {
        int64_t want = 0;
        for (int q = 0; q < 4; ++q) want += tp_value(q, step, i);
        ok = ok && sum[i] == want;
      }
      f.expect(ok, w, "world all_reduce step " + std::to_string(step));
    }
    // PP: stage 0 (the higher world rank) sends activations to stage 1, which answers with a
    // gradient of another size.
    std::vector<int32_t> act(1000 + static_cast<size_t>(step)), grad(17);
    if (pp.rank() == 0) {
      for (size_t i = 0; i < act.size(); ++i)
        act[i] = w * 100000 + step * 1000 + static_cast<int32_t>(i);
      pp.send(act.data(), act.size() * 4, 1);
      pp.recv(grad.data(), grad.size() * 4, 1);
      bool ok = true;
      const int peer = pp.world_rank(1);
      for (size_t i = 0; i < grad.size(); ++i)
        ok = ok && grad[i] == -(peer * 1000 + step * 100 + static_cast<int32_t>(i));
      f.expect(ok, w, "pp gradient step " + std::to_string(step));
    } else {
      pp.recv(act.data(), act.size() * 4, 0);
      const int peer = pp.world_rank(0);
      bool ok = true;
      for (size_t i = 0; i < act.size(); ++i)
        ok = ok && act[i] == peer * 100000 + step * 1000 + static_cast<int32_t>(i);
      f.expect(ok, w, "pp activations step " + std::to_string(step));
      for (size_t i = 0; i < grad.size(); ++i)
        grad[i] = -(w * 1000 + step * 100 + static_cast<int32_t>(i));
      pp.send(grad.data(), grad.size() * 4, 0);
    }
    // The trio's all_gather (rank 3 skips it), a world barrier, TP's all_to_all.
    if (trio.valid()) {
      const int32_t mine = w * 3 + step;
      int32_t got[3] = {};
      trio.all_gather(&mine, got, 1, DataType::kI32);
      f.expect(got[0] == step && got[1] == 3 + step && got[2] == 6 + step, w, "trio all_gather");
    }
    world.barrier();
    int32_t blocks[2] = {w * 10, w * 10 + 1}, swapped[2] = {};
    tp.all_to_all(blocks, swapped, 1, DataType::kI32);
    const int a = (w / 2) * 2;
    f.expect(swapped[0] == a * 10 + w % 2 && swapped[1] == (a + 1) * 10 + w % 2, w,
             "tp all_to_all");
  }

  // Nested: TP reversed by key, outliving the TP communicator it came from.
  Communicator reversed = [&] {
    Communicator inner = std::move(tp);
    return inner.split(0, -inner.rank());
  }();
  f.expect(reversed.size() == 2 && reversed.rank() == 1 - w % 2, w, "nested split order");
  f.expect(reversed.world_rank(0) == (w / 2) * 2 + 1, w, "nested world rank");
  const int64_t mine = w + 1;
  int64_t both[2] = {};
  reversed.all_gather(&mine, both, 1, DataType::kI64);
  const int64_t hi = (w / 2) * 2 + 2;
  f.expect(both[0] == hi && both[1] == hi - 1, w, "nested all_gather");
  world.barrier();
  f.expect(!world.broken() && !pp.broken(), w, "nothing broke");
}

}  // namespace

TEST_CASE("collectives as threads, split into TP groups and PP pairs, n=4") {
  for (const TransportKind kind : thread_transports()) {
    CAPTURE(static_cast<int>(kind));
    SplitFailures f;
    Config base;
    base.timeout = std::chrono::milliseconds(60000);
    base.transport = kind;
    const auto errors = run_threads(
        4, [&](Communicator& c) { tp_pp_world(c, f); }, base);
    for (const auto& e : errors) FAIL_CHECK(e);
    for (const auto& l : f.lines) FAIL_CHECK(l);
  }
}

TEST_CASE("split of a world of 1 and of a ring (refused, as all_to_all), an empty communicator") {
  Communicator one(Config{});
  Communicator self = one.split(0, 0);
  CHECK(self.size() == 1);
  CHECK(self.rank() == 0);
  int64_t x = 5, y = 0;
  self.all_reduce(&x, &y, 1, DataType::kI64, ReduceOp::kSum);
  CHECK(y == 5);
  Communicator none = one.split(kNoColor, 0);
  CHECK_FALSE(none.valid());
  CHECK_THROWS_AS(none.split(0, 0), Error);
  CHECK(none.transport_name() == "none (empty communicator)");

  std::mutex mu;
  std::vector<std::string> msgs;
  Config ring;
  ring.topology = Topology::kRing;
  const auto errors = run_threads(
      4,
      [&](Communicator& c) {
        try {
          c.split(0, 0);
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          if (e.kind() == ErrorKind::kInvalidArgument) msgs.push_back(e.what());
        }
        int32_t blocks[4] = {}, got[4] = {};
        try {
          c.all_to_all(blocks, got, 1, DataType::kI32);
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          if (e.kind() == ErrorKind::kInvalidArgument) msgs.push_back(e.what());
        }
        CHECK_FALSE(c.broken());
        c.barrier();
      },
      ring);
  for (const auto& e : errors) FAIL_CHECK(e);
  REQUIRE(msgs.size() == 8);
  size_t split_msgs = 0, a2a_msgs = 0;
  for (const auto& m : msgs) {
    split_msgs += m.find("split needs a mesh: on a ring of 4 ranks") != std::string::npos;
    a2a_msgs += m.find("all_to_all needs a mesh: on a ring of 4 ranks") != std::string::npos;
  }
  CHECK(split_msgs == 4);
  CHECK(a2a_msgs == 4);
}

namespace {

// Rank 0 sends on a child of the world and then on the world; rank 1 receives on the world
// first (same size, wrong order). Without the context check rank 1 would take the child's
// bytes; with it, kProtocol names both communicators and the world and child both break.
// Runs over `kind` (`over` empty) or over the given transports.
void check_spaces_never_mix(std::vector<std::unique_ptr<Transport>> over,
                            TransportKind kind = TransportKind::kTcp) {
  std::mutex mu;
  std::vector<std::string> msgs;
  Config base;
  base.timeout = std::chrono::milliseconds(10000);
  base.transport = kind;
  std::atomic<int> finished{0};
  auto body = [&](Communicator& world) {
    Communicator child = world.split(0, world.rank());
    REQUIRE(child.context() == 1);
    // (After a failed receive its buffer's contents are undefined: TCP reads header and
    // payload in one readv.)
    int64_t on_child = 111, on_world = 222, got = 0;
    try {
      if (world.rank() == 0) {
        child.send(&on_child, 8, 1);
        world.send(&on_world, 8, 1);
        world.barrier();  // fails: rank 1 gave up
      } else {
        world.recv(&got, 8, 0);
      }
    } catch (const Error& e) {
      std::lock_guard lock(mu);
      msgs.push_back(std::to_string(world.rank()) + ": " + e.what());
    }
    CHECK(world.broken());
    CHECK(child.broken());  // one broken state for the world and its children
    CHECK_THROWS_AS(child.barrier(), Error);
    // Fake links die with their transport: keep both until neither rank sends any more.
    ++finished;
    while (finished.load() < 2) std::this_thread::yield();
  };
  const auto errors =
      over.empty() ? run_threads(2, body, base) : run_threads_over(std::move(over), body, base);
  for (const auto& e : errors) FAIL_CHECK(e);
  bool named = false;
  const std::string want =
      "sent a message of communicator 1 where this rank expected one of "
      "communicator 0";
  for (const auto& m : msgs) {
    named = named || (m.rfind("1: ", 0) == 0 && m.find(want) != std::string::npos);
  }
  CHECK_MESSAGE(named, "rank 1 should name both communicators");
}

std::vector<std::unique_ptr<Transport>> fake_verbs(int n) {
  // Small frames and few receive slots: credits run out, messages span many frames.
  auto world = make_fake_verbs_world(n, 2, FakeMode::kUcDrop, 4096, 8);
  std::vector<std::unique_ptr<Transport>> ts;
  for (auto& t : world.transports) ts.push_back(std::move(t));
  return ts;
}

}  // namespace

TEST_CASE("messages of two communicators never mix: kProtocol names both, all break") {
  SUBCASE("tcp") {
    check_spaces_never_mix({});
  }
  SUBCASE("shm") {
    check_spaces_never_mix({}, TransportKind::kShm);
  }
  SUBCASE("verbs frame protocol on fake links") {
    check_spaces_never_mix(fake_verbs(2));
  }
}

TEST_CASE("split TP groups and PP pairs over the verbs frame protocol on fake links, n=4") {
  SplitFailures f;
  Config base;
  base.timeout = std::chrono::milliseconds(60000);
  const auto errors = run_threads_over(
      fake_verbs(4), [&](Communicator& c) { tp_pp_world(c, f); }, base);
  for (const auto& e : errors) FAIL_CHECK(e);
  for (const auto& l : f.lines) FAIL_CHECK(l);
}

TEST_CASE("an error in a split communicator names ranks in both numberings") {
  std::mutex mu;
  std::vector<std::string> msgs;
  Config base;
  base.timeout = std::chrono::milliseconds(10000);
  run_threads(
      4,
      [&](Communicator& world) {
        // {1, 3} ordered 3, 1: world rank 3 is rank 0 here, world rank 1 is rank 1.
        Communicator pair = world.split(world.rank() % 2 == 1 ? 0 : kNoColor, -world.rank());
        if (!pair.valid()) return;
        std::vector<char> buf(16);
        try {
          if (pair.rank() == 0) {
            pair.send(buf.data(), 8, 1);
          } else {
            pair.recv(buf.data(), 16, 0);
          }
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          msgs.push_back(e.what());
          CHECK(e.ranks() == std::vector<int>{3});  // world numbering
        }
      },
      base);
  REQUIRE(msgs.size() >= 1);
  const std::string& m = msgs[0];
  CHECK_MESSAGE(m.find("recv on rank 1 of communicator 1 (world rank 1)") != std::string::npos, m);
  CHECK_MESSAGE(m.find("here world rank 3 is rank 0") != std::string::npos, m);
}

}  // namespace cc::comm::test
