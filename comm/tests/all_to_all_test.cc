// all_to_all and all_to_allv as threads over loopback TCP (and, through the rdma suite's
// "collectives as threads*n=N" filter, over verbs in the Soft-RoCE guest): n = 1..8, counts
// including 0, every element of every output checked against the byte that rank p put there
// for this rank; in place (all_to_all) and out of place; then the argument checks.
#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "comm/tests/thread_world.h"

namespace cc::comm::test {
namespace {

using ByteBuf = std::vector<unsigned char>;

// Byte j of the block rank `from` sends rank `to`: differs between senders, receivers and
// positions, never the 0xee of an untouched output.
unsigned char a2a_byte(size_t from, size_t to, size_t j) {
  const auto v = static_cast<unsigned char>((from * 37 + to * 11 + j * 3 + 1) & 0xffu);
  return v == 0xee ? 0x11 : v;
}

struct A2aFailures {
  std::mutex mu;
  std::vector<std::string> lines;
  void add(const std::string& line) {
    std::lock_guard lock(mu);
    if (lines.size() < 20) lines.push_back(line);
  }
};

// "" when out (elements of e bytes) holds, at each block's place, what every rank sent this
// one, and 0xee elsewhere; else the first wrong element.
std::string check_blocks(const ByteBuf& out, size_t e, size_t me,
                         const std::vector<size_t>& from_counts,
                         const std::vector<size_t>& displs) {
  ByteBuf want(out.size(), 0xee);
  for (size_t p = 0; p < from_counts.size(); ++p) {
    for (size_t j = 0; j < from_counts[p] * e; ++j) want[displs[p] * e + j] = a2a_byte(p, me, j);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] != want[i]) {
      return "element " + std::to_string(i / e) + " (byte " + std::to_string(i % e) + ") is " +
             std::to_string(out[i]) + ", expected " + std::to_string(want[i]);
    }
  }
  return "";
}

void all_to_all_cases(Communicator& c, A2aFailures& f) {
  const size_t n = static_cast<size_t>(c.size()), r = static_cast<size_t>(c.rank());
  size_t turn = 0;
  for (DataType t : {DataType::kU8, DataType::kBF16, DataType::kI32, DataType::kF64}) {
    const size_t e = size_of(t);
    for (size_t count : {size_t{0}, size_t{1}, size_t{1001}, (size_t{1} << 18) / e + 3}) {
      const bool inplace = turn++ % 2 == 1;
      ByteBuf in(n * count * e), out(n * count * e, 0xee);
      for (size_t p = 0; p < n; ++p) {
        for (size_t j = 0; j < count * e; ++j) in[p * count * e + j] = a2a_byte(r, p, j);
      }
      ByteBuf& dst = inplace ? in : out;
      c.all_to_all(in.data(), dst.data(), count, t);
      std::vector<size_t> counts(n, count), displs(n);
      for (size_t p = 0; p < n; ++p) displs[p] = p * count;
      const std::string why = check_blocks(dst, e, r, counts, displs);
      if (!why.empty()) {
        f.add("all_to_all n=" + std::to_string(n) + " rank " + std::to_string(r) + " " +
              std::string(to_string(t)) + " count=" + std::to_string(count) +
              (inplace ? " in-place" : "") + ": " + why);
      }
    }
  }
}

// Rank `from`'s count for rank `to` in round `round`: zero for about a third of the pairs
// (the self block included, in some rounds), up to a few thousand elements otherwise.
size_t v_count(size_t from, size_t to, size_t round) {
  const size_t k = (from * 5 + to * 3 + round) % 7;
  if (k % 3 == 0) return 0;
  return k * (round == 2 ? 4099 : 13) + from;
}

void all_to_allv_cases(Communicator& c, A2aFailures& f) {
  const size_t n = static_cast<size_t>(c.size()), r = static_cast<size_t>(c.rank());
  for (size_t round = 0; round < 4; ++round) {
    const DataType t = round % 2 == 0 ? DataType::kI16 : DataType::kF32;
    const size_t e = size_of(t);
    std::vector<size_t> in_counts(n), in_displs(n), out_counts(n), out_displs(n);
    // In blocks in rank order with a gap of 2 elements; out blocks in reverse rank order with
    // a gap of 1 element, so a block landing at the wrong place or spilling shows.
    size_t in_total = 0, out_total = 1;
    for (size_t p = 0; p < n; ++p) {
      in_counts[p] = v_count(r, p, round);
      in_displs[p] = in_total;
      in_total += in_counts[p] + 2;
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t p = n - 1 - i;
      out_counts[p] = v_count(p, r, round);
      out_displs[p] = out_total;
      out_total += out_counts[p] + 1;
    }
    ByteBuf in(in_total * e, 0x5a), out(out_total * e, 0xee);
    for (size_t p = 0; p < n; ++p) {
      for (size_t j = 0; j < in_counts[p] * e; ++j) in[in_displs[p] * e + j] = a2a_byte(r, p, j);
    }
    c.all_to_allv(in.data(), in_counts, in_displs, out.data(), out_counts, out_displs, t);
    const std::string why = check_blocks(out, e, r, out_counts, out_displs);
    if (!why.empty()) {
      f.add("all_to_allv n=" + std::to_string(n) + " rank " + std::to_string(r) + " round " +
            std::to_string(round) + ": " + why);
    }
  }
  // Every count 0: only headers travel.
  std::vector<size_t> zeros(n, 0);
  c.all_to_allv(nullptr, zeros, zeros, nullptr, zeros, zeros, DataType::kU64);
}

// Over loopback TCP and over shared memory.
void run_all_to_all(int n) {
  for (const TransportKind kind : thread_transports()) {
    CAPTURE(static_cast<int>(kind));
    A2aFailures f;
    Config base;
    base.timeout = std::chrono::milliseconds(60000);
    base.transport = kind;
    const auto errors = run_threads(
        n,
        [&](Communicator& c) {
          all_to_all_cases(c, f);
          all_to_allv_cases(c, f);
          c.barrier();
        },
        base);
    for (const auto& e : errors) FAIL_CHECK(e);
    for (const auto& l : f.lines) FAIL_CHECK(l);
  }
}

// Calls `call`, which must throw kInvalidArgument with `needle` in its message.
template <class F>
std::string invalid_argument(F&& call, const std::string& needle) {
  try {
    call();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kInvalidArgument) return std::string("wrong kind: ") + e.what();
    if (std::string(e.what()).find(needle) == std::string::npos) {
      return "message lacks '" + needle + "': " + e.what();
    }
    return "";
  }
  return "no error (expected one naming '" + needle + "')";
}

}  // namespace

TEST_CASE("collectives as threads, all_to_all and all_to_allv, n=1") {
  run_all_to_all(1);
}
TEST_CASE("collectives as threads, all_to_all and all_to_allv, n=2") {
  run_all_to_all(2);
}
TEST_CASE("collectives as threads, all_to_all and all_to_allv, n=3") {
  run_all_to_all(3);
}
TEST_CASE("collectives as threads, all_to_all and all_to_allv, n=4") {
  run_all_to_all(4);
}
TEST_CASE("all_to_all and all_to_allv as threads, n=5, 6, 7, 8") {
  for (int n : {5, 6, 7, 8}) {
    CAPTURE(n);
    run_all_to_all(n);
  }
}

TEST_CASE("all_to_all(v) argument errors are kInvalidArgument naming the value, usable after") {
  A2aFailures f;
  const auto errors = run_threads(3, [&](Communicator& c) {
    const size_t r = static_cast<size_t>(c.rank());
    std::vector<int32_t> in(12, 1), out(12, 0);
    const std::vector<size_t> three{1, 1, 1}, two{1, 1}, offs{0, 1, 2};
    auto expect = [&](const std::string& what, const std::string& why) {
      if (!why.empty()) f.add("rank " + std::to_string(r) + ", " + what + ": " + why);
    };
    expect(
        "short in_counts",
        invalid_argument(
            [&] { c.all_to_allv(in.data(), two, offs, out.data(), three, offs, DataType::kI32); },
            "in_counts has 2 entries; it needs one per rank, 3"));
    expect(
        "short out_displs",
        invalid_argument(
            [&] { c.all_to_allv(in.data(), three, offs, out.data(), three, two, DataType::kI32); },
            "out_displs has 2 entries"));
    std::vector<size_t> self_differs{1, 1, 1};
    self_differs[r] = 2;
    expect("self block sizes differ",
           invalid_argument(
               [&] {
                 c.all_to_allv(in.data(), three, offs, out.data(), self_differs, offs,
                               DataType::kI32);
               },
               "in_counts[" + std::to_string(r) + "] = 1 but out_counts[" + std::to_string(r) +
                   "] = 2"));
    const std::vector<size_t> overlapping{0, 1, 3};  // ranks 0 and 1: [0, 2) and [1, 3)
    const std::vector<size_t> twos{2, 2, 2};
    std::vector<size_t> in_twos{2, 2, 2};
    expect("out blocks overlap",
           invalid_argument(
               [&] {
                 c.all_to_allv(in.data(), in_twos, std::vector<size_t>{0, 2, 4}, out.data(), twos,
                               overlapping, DataType::kI32);
               },
               "the out blocks of ranks 0 and 1 overlap (out_displs[0] = 0, out_counts[0] = 2, "
               "out_displs[1] = 1)"));
    expect("overflowing displacement",
           invalid_argument(
               [&] {
                 c.all_to_allv(in.data(), three, std::vector<size_t>{0, SIZE_MAX - 1, 2},
                               out.data(), three, offs, DataType::kI32);
               },
               "in_displs[1] = " + std::to_string(SIZE_MAX - 1) + " + in_counts[1] = 1"));
    expect(
        "null in",
        invalid_argument(
            [&] { c.all_to_allv(nullptr, three, offs, out.data(), three, offs, DataType::kI32); },
            "all_to_allv: in: null buffer"));
    expect("in and out overlap (v)", invalid_argument(
                                         [&] {
                                           c.all_to_allv(in.data(), three, offs, in.data() + 1,
                                                         three, offs, DataType::kI32);
                                         },
                                         "in and out overlap"));
    expect("in and out overlap, not equal",
           invalid_argument([&] { c.all_to_all(in.data(), in.data() + 1, 2, DataType::kI32); },
                            "in and out overlap without being equal"));
    expect("null out",
           invalid_argument([&] { c.all_to_all(in.data(), nullptr, 2, DataType::kI32); },
                            "all_to_all: null buffer"));
    CHECK_FALSE(c.broken());
    // Still usable: a correct all_to_all, in place.
    for (size_t p = 0; p < 3; ++p) in[p] = static_cast<int32_t>(10 * r + p);
    c.all_to_all(in.data(), in.data(), 1, DataType::kI32);
    for (size_t p = 0; p < 3; ++p) {
      if (in[p] != static_cast<int32_t>(10 * p + r)) {
        f.add("rank " + std::to_string(r) + ": after the errors, in[" + std::to_string(p) +
              "] = " + std::to_string(in[p]));
      }
    }
  });
  for (const auto& e : errors) FAIL_CHECK(e);
  for (const auto& l : f.lines) FAIL_CHECK(l);
}

TEST_CASE("all_to_allv counts that disagree between ranks: kProtocol naming the peer, broken") {
  std::mutex mu;
  std::vector<std::string> msgs;
  Config base;
  base.timeout = std::chrono::milliseconds(10000);
  const auto errors = run_threads(
      2,
      [&](Communicator& c) {
        // Rank 0 sends rank 1 three elements; rank 1 expects four from rank 0.
        std::vector<int32_t> in(8, 7), out(8, 0);
        const std::vector<size_t> in_counts =
            c.rank() == 0 ? std::vector<size_t>{1, 3} : std::vector<size_t>{1, 1};
        const std::vector<size_t> out_counts =
            c.rank() == 0 ? std::vector<size_t>{1, 1} : std::vector<size_t>{4, 1};
        const std::vector<size_t> displs{0, 4};
        try {
          c.all_to_allv(in.data(), in_counts, displs, out.data(), out_counts, displs,
                        DataType::kI32);
        } catch (const Error& e) {
          std::lock_guard lock(mu);
          msgs.push_back(std::to_string(c.rank()) + " " + to_string(e.kind()) + " " + e.what());
        }
        if (c.rank() == 1) CHECK(c.broken());  // rank 0 may have finished before rank 1 failed
      },
      base);
  for (const auto& e : errors) FAIL_CHECK(e);
  // TCP says "rank 0 sent a message of 12 bytes where 16 were expected", verbs "rank 0 on
  // rxe1_0: sent a message of 12 bytes where this rank expects 16".
  bool named = false;
  for (const auto& m : msgs) {
    named = named || (m.rfind("1 ", 0) == 0 && m.find("rank 0") != std::string::npos &&
                      m.find("12 bytes") != std::string::npos && m.find("16") != std::string::npos);
  }
  CHECK_MESSAGE(named, "rank 1's error should name rank 0 and both sizes");
}

}  // namespace cc::comm::test
