// clustercomm-perf: an nccl-tests-style table for each collective of libclustercomm.
//
//   clustercomm-perf [-N ranks] [-o all_reduce|reduce_scatter|all_gather|broadcast|sendrecv|
//                     all_to_all|all_to_allv|split|all] [-g group]
//                    [-d type] [-r redop] [-b minbytes] [-e maxbytes] [-f factor]
//                    [-n iters] [-w warmup] [-c|--check 0/1] [-P|--percentiles 0/1]
// -P 1 adds, after each row, rank 0's per-call p50 and p99 of the out-of-place run:
//   "# percentiles size 8: p50 12.3 us p99 45.6 us (rank 0, 200 calls)" (clusterctl health).
// Every call of rank 0 is timed with the time-stamp counter (x86; steady_clock elsewhere). A
// sendrecv call is rank 0's send to its right neighbour and then its receive from its left
// one: at n = 2 a full round trip (one way is half of it).
// Started by a launcher (CLUSTERCOMM_RANK or MLX_RANK set) it is one rank; otherwise it
// forks -N local ranks (default 2) on 127.0.0.1 itself. size = bytes of the whole buffer
// (nccl-tests); time = max over ranks of the mean per call; algbw = size/time;
// busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (reduce_scatter, all_gather, all_to_all and
// all_to_allv, as nccl-tests' alltoall: the share of the buffer that crosses a cable), 1
// otherwise. all_to_all: size/n bytes to each rank. all_to_allv: uneven blocks, rank r sends
// rank p (1 + (r + p) mod n) units of size/(n(n+1)/2) bytes (every rank sends and receives
// size bytes in all). all_to_allv and sendrecv have no in-place form: their in-place columns
// read n/a. A size below one element per rank block (-b 8 for all_gather of f32 at n = 4) is
// raised to one such block, and a size the rounding repeats is run once. A "# tuning" line
// before the tables gives the topology, chunk, window and one-shot limit rank 0 chose (the
// chunk left unset is the transport's: config.h, tuning_chunk_bytes). -o all on a ring of
// more than 3 ranks leaves out all_to_all and all_to_allv (they need a mesh), saying so.
// Split communicators (-g G, and -o split = -o all_reduce -g 2 unless -g says otherwise): the
// world is split into groups of G consecutive ranks (Communicator::split, color rank / G, key
// rank: tensor-parallel groups) before the tables, timed on its own ("# split: ... us", rank
// 0's median of kSplits splits), and every table then runs on every group at once; nranks,
// busbw and the check are the group's, time is the slowest rank of any group, #wrong the sum
// over all groups. G must divide the world's size. -o all does not include split (-g does
// that for every op).
#include <poll.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bench/sizes.h"
#include "comm/clustercomm.h"
#include "comm/tests/pattern.h"

using namespace cc::comm;

namespace {

struct Options {
  bench::Sweep sweep;
  int ranks = 2;
  std::string op = "all_reduce";
  DataType type = DataType::kF32;
  ReduceOp redop = ReduceOp::kSum;
  bool check = true;
  bool percentiles = false;
  int group = 0;  // -g: ranks per split communicator; 0: the whole world
};

// Splits timed for the "# split" line (the last one's communicators run the tables).
constexpr int kSplits = 20;

struct Result {
  double us = 0;
  size_t wrong = 0;
  double p50_us = 0, p99_us = 0;  // this rank's per-call times (with -P 1)
  int calls = 0;
};

double bus_factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all" || op == "all_to_allv") {
    return static_cast<double>(n - 1) / n;
  }
  return 1.0;
}

// The bytes a size is rounded down to a multiple of.
size_t size_unit(const std::string& op, size_t e, size_t n) {
  if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all") return e * n;
  if (op == "all_to_allv") return e * n * (n + 1) / 2;
  return e;
}

// all_to_allv's layout for `bytes` of whole buffer: rank `from` sends rank `to`
// (1 + (from + to) mod n) units; blocks packed in rank order, in elements.
struct VLayout {
  std::vector<size_t> in_counts, in_displs, out_counts, out_displs;
  VLayout(size_t bytes, size_t e, size_t n, size_t r)
      : in_counts(n), in_displs(n), out_counts(n), out_displs(n) {
    const size_t unit = bytes / size_unit("all_to_allv", e, n);
    size_t in_at = 0, out_at = 0;
    for (size_t p = 0; p < n; ++p) {
      in_counts[p] = unit * (1 + (r + p) % n);
      out_counts[p] = unit * (1 + (p + r) % n);
      in_displs[p] = in_at;
      out_displs[p] = out_at;
      in_at += in_counts[p];
      out_at += out_counts[p];
    }
  }
};

enum class Op {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kSendRecv,
  kAllToAll,
  kAllToAllv
};

// Every operation -o takes (and -o all runs, in this order).
constexpr std::array<const char*, 7> kOps{"all_reduce", "reduce_scatter", "all_gather", "broadcast",
                                          "sendrecv",   "all_to_all",     "all_to_allv"};

Op op_of(const std::string& op) {
  if (op == "all_reduce") return Op::kAllReduce;
  if (op == "reduce_scatter") return Op::kReduceScatter;
  if (op == "all_gather") return Op::kAllGather;
  if (op == "broadcast") return Op::kBroadcast;
  if (op == "all_to_all") return Op::kAllToAll;
  if (op == "all_to_allv") return Op::kAllToAllv;
  return Op::kSendRecv;
}

// Runs `op` once on buffers sized for `bytes` (whole-buffer bytes). The op is an enum, not
// its name: comparing names on every call cost about 200 instructions a call, which is
// visible in an 8-byte ping-pong on the emulated guest.
void run_once(Communicator& c, const Options& o, Op op, size_t bytes,
              std::vector<unsigned char>& in, std::vector<unsigned char>& out, bool inplace) {
  const size_t e = size_of(o.type), n = static_cast<size_t>(c.size());
  const size_t r = static_cast<size_t>(c.rank());
  if (op == Op::kAllReduce) {
    const size_t count = bytes / e;
    c.all_reduce(in.data(), inplace ? in.data() : out.data(), count, o.type, o.redop);
  } else if (op == Op::kReduceScatter) {
    const size_t count = bytes / e / n;
    c.reduce_scatter(in.data(), inplace ? in.data() + r * count * e : out.data(), count, o.type,
                     o.redop);
  } else if (op == Op::kAllGather) {
    const size_t count = bytes / e / n;
    c.all_gather(inplace ? out.data() + r * count * e : in.data(), out.data(), count, o.type);
  } else if (op == Op::kBroadcast) {
    c.broadcast(in.data(), inplace ? in.data() : out.data(), bytes / e, o.type, 0);
  } else if (op == Op::kAllToAll) {
    c.all_to_all(in.data(), inplace ? in.data() : out.data(), bytes / e / n, o.type);
  } else if (op == Op::kAllToAllv) {
    const VLayout v(bytes, e, n, r);  // a few small vectors: negligible beside the exchange
    c.all_to_allv(in.data(), v.in_counts, v.in_displs, out.data(), v.out_counts, v.out_displs,
                  o.type);
  } else {  // sendrecv: ring exchange with the neighbours
    const int right = (c.rank() + 1) % c.size(), left = (c.rank() + c.size() - 1) % c.size();
    if (c.size() == 1) return;
    if (c.rank() % 2 == 0) {
      c.send(in.data(), bytes, right);
      c.recv(out.data(), bytes, left);
    } else {
      c.recv(out.data(), bytes, left);
      c.send(in.data(), bytes, right);
    }
  }
}

size_t check_once(Communicator& c, const Options& o, const std::string& op, size_t bytes,
                  std::vector<unsigned char>& in, std::vector<unsigned char>& out, bool inplace) {
  const size_t e = size_of(o.type), n = static_cast<size_t>(c.size());
  const int rank = c.rank();
  const size_t r = static_cast<size_t>(rank);
  std::vector<unsigned char> want(bytes + e);
  const unsigned char* got = nullptr;
  size_t count = 0;
  if (op == "all_reduce") {
    count = bytes / e;
    test::fill(o.type, o.redop, rank, in.data(), count);
    test::expected(o.type, o.redop, c.size(), want.data(), count);
    got = inplace ? in.data() : out.data();
  } else if (op == "reduce_scatter") {
    count = bytes / e / n;
    test::fill(o.type, o.redop, rank, in.data(), count * n);
    test::expected(o.type, o.redop, c.size(), want.data(), count, r * count);
    got = inplace ? in.data() + r * count * e : out.data();
  } else if (op == "all_gather") {
    const size_t per = bytes / e / n;
    count = per * n;
    for (size_t q = 0; q < n; ++q) {
      test::fill(o.type, ReduceOp::kSum, static_cast<int>(q), want.data() + q * per * e, per);
    }
    test::fill(o.type, ReduceOp::kSum, rank, inplace ? out.data() + r * per * e : in.data(), per);
    got = out.data();
  } else if (op == "all_to_all" || op == "all_to_allv") {
    // Rank r's block for rank p holds fill() of "rank" r * n + p.
    VLayout v(op == "all_to_allv" ? bytes : 0, e, n, r);
    if (op == "all_to_all") {
      for (size_t p = 0; p < n; ++p) {
        v.in_counts[p] = v.out_counts[p] = bytes / e / n;
        v.in_displs[p] = v.out_displs[p] = p * (bytes / e / n);
      }
    }
    for (size_t p = 0; p < n; ++p) {
      test::fill(o.type, ReduceOp::kSum, static_cast<int>(r * n + p),
                 in.data() + v.in_displs[p] * e, v.in_counts[p]);
      test::fill(o.type, ReduceOp::kSum, static_cast<int>(p * n + r),
                 want.data() + v.out_displs[p] * e, v.out_counts[p]);
      count += v.out_counts[p];
    }
    got = op == "all_to_all" && inplace ? in.data() : out.data();
  } else if (op == "broadcast") {
    count = bytes / e;
    test::fill(o.type, ReduceOp::kSum, rank, in.data(), count);
    test::fill(o.type, ReduceOp::kSum, 0, want.data(), count);
    got = inplace ? in.data() : out.data();
  } else {
    count = bytes;
    const int left = (rank + c.size() - 1) % c.size();
    test::fill(DataType::kU8, ReduceOp::kSum, rank, in.data(), count);
    test::fill(DataType::kU8, ReduceOp::kSum, left, want.data(), count);
    got = out.data();
    if (c.size() == 1) return 0;
  }
  run_once(c, o, op_of(op), bytes, in, out, inplace);
  const size_t ee = op == "sendrecv" ? 1 : e;
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(got + i * ee, want.data() + i * ee, ee) != 0) ++wrong;
  }
  return wrong;
}

// A per-call tick: the x86 time-stamp counter (rdtsc: unprivileged, a few ns on hardware), else
// steady_clock's count (cheap on a Mac and on arm64 Linux). Only differences of it are used,
// scaled by the timed loop's length on steady_clock, so all it must have is a constant rate
// (invariant TSC: every x86-64 CPU of the last decade).
uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

Result measure(Communicator& c, const Options& o, const std::string& op, size_t bytes,
               std::vector<unsigned char>& in, std::vector<unsigned char>& out, bool inplace) {
  Result res;
  const Op kind = op_of(op);
  for (int w = 0; w < o.sweep.warmup_for(bytes); ++w) run_once(c, o, kind, bytes, in, out, inplace);
  c.barrier();
  const int iters = o.sweep.iters_for(bytes);
  std::vector<uint64_t> calls;
  // Only rank 0's calls are timed one by one (it prints the percentiles), with one read of the
  // tick counter per call: the end of one call is the start of the next. The counter is the
  // x86 time-stamp counter where there is one, as perftest's get_cycles(): a clock read
  // (steady_clock) costs about 1 us in the emulated guest, where the kernel reads an HPET, and
  // sits on the ping-pong's critical path (rank 0 reads it between its recv and its next
  // send). Ticks become microseconds by the loop's own length on steady_clock.
  const bool per_call = o.percentiles && c.rank() == 0;
  if (per_call) calls.reserve(static_cast<size_t>(iters));
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t k0 = ticks();
  uint64_t s0 = k0;
  for (int i = 0; i < iters; ++i) {
    run_once(c, o, kind, bytes, in, out, inplace);
    if (per_call) {
      const uint64_t s1 = ticks();
      calls.push_back(s1 - s0);
      s0 = s1;
    }
  }
  const uint64_t k1 = ticks();
  const double total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  double us = total_us / iters;
  if (!calls.empty()) {
    std::sort(calls.begin(), calls.end());
    auto at = [&](double q) {
      return calls[std::min(calls.size() - 1, static_cast<size_t>(q * static_cast<double>(calls.size())))];
    };
    const double us_per_tick = k1 > k0 ? total_us / static_cast<double>(k1 - k0) : 0.0;
    res.p50_us = static_cast<double>(at(0.50)) * us_per_tick;
    res.p99_us = static_cast<double>(at(0.99)) * us_per_tick;
    res.calls = static_cast<int>(calls.size());
  }
  c.all_reduce(&us, &res.us, 1, DataType::kF64, ReduceOp::kMax);
  if (o.check) {
    uint64_t wrong = check_once(c, o, op, bytes, in, out, inplace), total = 0;
    c.all_reduce(&wrong, &total, 1, DataType::kU64, ReduceOp::kSum);
    res.wrong = total;
  }
  return res;
}

// bench::kSettleMs of 4-byte all_reduces before anything is timed (sizes.h says why).
void settle(Communicator& c) {
  const auto t0 = std::chrono::steady_clock::now();
  int32_t go = 1;
  while (go != 0) {
    const int32_t mine = c.rank() == 0 && std::chrono::steady_clock::now() - t0 <
                                              std::chrono::milliseconds(bench::kSettleMs);
    c.all_reduce(&mine, &go, 1, DataType::kI32, ReduceOp::kMax);
  }
}

// Across the groups of a split world: the slowest rank's time, every group's wrong values
// (each rank of a group holds its group's sum: its rank 0 brings it).
void across(Communicator& group, Communicator& world, Result& r) {
  world.all_reduce(&r.us, &r.us, 1, DataType::kF64, ReduceOp::kMax);
  uint64_t wrong = group.rank() == 0 ? r.wrong : 0;
  world.all_reduce(&wrong, &wrong, 1, DataType::kU64, ReduceOp::kSum);
  r.wrong = static_cast<size_t>(wrong);
}

// The tables, on `c`: the world itself, or this rank's group split from `world` (then only
// world rank 0 prints, and each row is taken across the groups).
int run_tables(Communicator& c, Communicator& world, const Options& o) {
  const bool grouped = &c != &world;
  const std::vector<std::string> ops =
      o.op == "all" ? std::vector<std::string>(kOps.begin(), kOps.end())
                    : std::vector<std::string>{o.op};
  const size_t e = size_of(o.type), n = static_cast<size_t>(c.size());
  // Room for the largest size, or one all_to_allv unit (the largest rank block) above it.
  const size_t room = std::max(o.sweep.max_bytes, e * n * (n + 1) / 2) + 64;
  std::vector<unsigned char> in(room), out(room);
  const bool lead = world.rank() == 0;
  size_t total_wrong = 0;
  settle(c);
  // all_to_all(v) exchange with every peer at once: on a ring of more than 3 ranks (not every
  // pair cabled) the library refuses them, so -o all leaves them out, saying so.
  const bool ring = c.topology() == Topology::kRing && c.size() > 3;
  if (lead) {
    const Tuning& t = c.tuning();
    std::printf("# tuning (rank 0's, job-wide): topology %s, chunk %zu B, window %zu chunks, "
                "one-shot all_reduce up to %zu B\n",
                c.topology() == Topology::kRing ? "ring" : "mesh", t.chunk_bytes, t.window_chunks,
                t.one_shot_max_bytes);
  }
  for (const std::string& op : ops) {
    if (ring && o.op == "all" && (op == "all_to_all" || op == "all_to_allv")) {
      if (lead) {
        std::printf("# %s skipped: it needs a mesh (every pair cabled), and the topology is a "
                    "ring of %d ranks\n",
                    op.c_str(), c.size());
      }
      continue;
    }
    // What the header and every row show: sendrecv moves bytes (uint8), and only all_reduce
    // and reduce_scatter reduce.
    const std::string type_name(to_string(op == "sendrecv" ? DataType::kU8 : o.type));
    const std::string redop_name = op == "all_reduce" || op == "reduce_scatter"
                                       ? std::string(to_string(o.redop))
                                       : std::string("none");
    const bool has_inplace = op != "sendrecv" && op != "all_to_allv";
    const size_t unit = size_unit(op, e, n);
    const double f = bus_factor(op, c.size());
    if (lead) {
      std::printf("# clustercomm-perf %s: nranks %d type %s redop %s transport %s%s\n", op.c_str(),
                  c.size(), type_name.c_str(), redop_name.c_str(), c.transport_name().c_str(),
                  grouped ? (" (each of " + std::to_string(world.size() / c.size()) +
                             " groups split from " + std::to_string(world.size()) +
                             " ranks, all at once)")
                                .c_str()
                          : "");
      std::printf("#%61s%s\n", "", "out-of-place                       in-place");
      std::printf("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "size", "count",
                  "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                  "busbw", "#wrong");
      std::printf("#%11s %13s %9s %7s %7s %8s %7s %7s %6s %8s %7s %7s %6s\n", "(B)", "(elements)",
                  "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    }
    double bus_sum = 0;
    int rows = 0;
    size_t last_bytes = SIZE_MAX;
    for (size_t size : o.sweep.sizes()) {
      // Whole rank blocks, at least one when the size asked for is not 0 (a row of 0 bytes
      // for -b 8 told nothing), each size once.
      const size_t bytes = size == 0 ? 0 : std::max(unit, size / unit * unit);
      if (bytes == last_bytes) continue;
      last_bytes = bytes;
      Result a = measure(c, o, op, bytes, in, out, false);
      Result b = has_inplace ? measure(c, o, op, bytes, in, out, true) : Result{};
      if (grouped) {
        across(c, world, a);
        if (has_inplace) across(c, world, b);
      }
      total_wrong += a.wrong + b.wrong;
      const double alg_a = static_cast<double>(bytes) / a.us / 1e3;
      bus_sum += alg_a * f;
      ++rows;
      if (lead) {
        std::printf("%12zu %13zu %9s %7s %7d %8.2f %7.2f %7.2f %6zu", bytes,
                    op == "sendrecv" ? bytes : bytes / e, type_name.c_str(), redop_name.c_str(),
                    op == "broadcast" ? 0 : -1, a.us, alg_a, alg_a * f, a.wrong);
        if (has_inplace) {
          const double alg_b = static_cast<double>(bytes) / b.us / 1e3;
          std::printf(" %8.2f %7.2f %7.2f %6zu\n", b.us, alg_b, alg_b * f, b.wrong);
        } else {
          std::printf(" %8s %7s %7s %6s\n", "n/a", "n/a", "n/a", "n/a");
        }
        if (o.percentiles) {
          std::printf("# percentiles size %zu: p50 %.2f us p99 %.2f us (rank 0, %d calls%s)\n",
                      bytes, a.p50_us, a.p99_us, a.calls,
                      op == "sendrecv" ? ", each a send and a receive: at n = 2 a round trip" : "");
        }
        std::fflush(stdout);
      }
    }
    if (lead) {
      std::printf("# Out of bounds values : %zu %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
      std::printf("# Avg bus bandwidth    : %.3f\n#\n", rows ? bus_sum / rows : 0.0);
    }
  }
  return total_wrong == 0 ? 0 : 1;
}

int run_rank(Communicator& world, const Options& o) {
  if (o.group == 0 && o.op != "split") return run_tables(world, world, o);
  const int g = o.group > 0 ? o.group : 2;
  if (world.size() % g != 0) {
    if (world.rank() == 0) {
      std::fprintf(stderr,
                   "clustercomm-perf: error: -g %d: %d ranks do not make whole groups of %d "
                   "(give a -g that divides the number of ranks)\n",
                   g, world.size(), g);
    }
    return 2;
  }
  settle(world);
  std::optional<Communicator> group;
  std::vector<double> us;
  for (int i = 0; i < kSplits; ++i) {
    world.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    Communicator c = world.split(world.rank() / g, world.rank());
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    group.emplace(std::move(c));
  }
  std::sort(us.begin(), us.end());
  if (world.rank() == 0) {
    std::printf("# split: %d ranks into %d groups of %d (color rank / %d, key rank): %.1f us "
                "(rank 0, median of %d splits)\n",
                world.size(), world.size() / g, g, g, us[us.size() / 2], kSplits);
  }
  Options inner = o;
  if (inner.op == "split") inner.op = "all_reduce";
  return run_tables(*group, world, inner);
}

constexpr const char* kUsage =
    "usage: clustercomm-perf [-N ranks] [-o op|all] [-d type] [-r redop] [-b min] [-e max] "
    "[-f factor] [-n iters] [-w warmup] [-c 0|1] [-P 0|1] [-g group]\n";

int usage() {
  std::fputs(kUsage, stderr);
  return 2;
}

// -h: what each flag does and its default, on stdout.
void help() {
  std::fputs(kUsage, stdout);
  std::fputs(
      "An nccl-tests-style table (size, count, type, redop, root, time in us, algbw and busbw\n"
      "in GB/s, wrong values) for each size of the sweep, out-of-place then in-place.\n"
      "\n"
      "  -N, --ranks N          local ranks to fork on 127.0.0.1 (1..64, default 2); ignored\n"
      "                         when started by a launcher (CLUSTERCOMM_RANK or MLX_RANK set):\n"
      "                         then this process is one rank of the launcher's world\n"
      "  -o, --op OP            all_reduce (default), reduce_scatter, all_gather, broadcast,\n"
      "                         sendrecv, all_to_all, all_to_allv, split (all_reduce in\n"
      "                         groups of -g, default 2), or all (one table each; not split)\n"
      "  -d, --datatype T       f32 (default) f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64\n"
      "  -r, --redop R          sum (default), prod, min, max\n"
      "  -b, --minbytes SIZE    first size, bytes of the whole buffer (K M G T suffixes; 8)\n"
      "  -e, --maxbytes SIZE    last size (default 64M)\n"
      "  -f, --stepfactor F     each size is the last times F (default 2)\n"
      "  -n, --iters N          timed calls per size (default 50; fewer above 5 MiB, at least 5)\n"
      "  -w, --warmup_iters N   untimed calls first (default a fifth of -n, at least 2)\n"
      "  -c, --check 0|1        check every value after the timed calls (default 1)\n"
      "  -P, --percentiles 0|1  add rank 0's per-call p50 and p99 after each row (default 0)\n"
      "  -g, --group G          split the ranks into groups of G (color rank / G) and run on\n"
      "                         every group at once; G must divide the ranks (default: none)\n"
      "  -h, --help             this text\n"
      "\n"
      "The environment chooses the transport and tuning as for any libclustercomm job\n"
      "(CLUSTERCOMM_TRANSPORT, CLUSTERCOMM_TOPOLOGY, CLUSTERCOMM_CHUNK_BYTES, ...: comm/README.md).\n"
      "Exit status: 0 when every value checked is right, 1 when one is wrong, 2 for a bad flag,\n"
      "3 when the library fails (the error names the rank and what to do), 128 + N when a\n"
      "forked rank died of signal N.\n",
      stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        help();
        return 0;
      }
      if (o.sweep.parse(i, argc, argv)) continue;
      if (i + 1 >= argc) {
        std::fprintf(stderr, "clustercomm-perf: error: %s: unknown flag or no value after it\n",
                     a.c_str());
        return usage();
      }
      const char* v = argv[++i];
      if (a == "-N" || a == "--ranks") {
        o.ranks = static_cast<int>(bench::parse_int(a.c_str(), v, 1, 64));
      } else if (a == "-o" || a == "--op") {
        o.op = v;
        if (o.op != "all" && o.op != "split" &&
            std::find(kOps.begin(), kOps.end(), o.op) == kOps.end()) {
          throw bench::UsageError("-o " + o.op + ": not an operation (all_reduce, reduce_scatter, "
                                  "all_gather, broadcast, sendrecv, all_to_all, all_to_allv, "
                                  "split or all)");
        }
      } else if (a == "-d" || a == "--datatype") {
        const auto t = parse_data_type(v);
        if (!t) throw bench::UsageError("-d " + std::string(v) +
                                        ": not a data type (f32 f64 f16 bf16 i8 i16 i32 i64 u8 "
                                        "u16 u32 u64, or the names the table header prints)");
        o.type = *t;
      } else if (a == "-r" || a == "--op_type" || a == "--redop") {
        const auto r = parse_reduce_op(v);
        if (!r) throw bench::UsageError("-r " + std::string(v) + ": not a reduction (sum, prod, min, max)");
        o.redop = *r;
      } else if (a == "-c" || a == "--check") {
        o.check = bench::parse_int(a.c_str(), v, 0, 1) != 0;
      } else if (a == "-P" || a == "--percentiles") {
        o.percentiles = bench::parse_int(a.c_str(), v, 0, 1) != 0;
      } else if (a == "-g" || a == "--group") {
        o.group = static_cast<int>(bench::parse_int(a.c_str(), v, 1, 64));
      } else {
        std::fprintf(stderr, "clustercomm-perf: error: %s: unknown flag\n", a.c_str());
        return usage();
      }
    }
    o.sweep.check();
    const int g = o.group > 0 ? o.group : o.op == "split" ? 2 : 0;
    const bool forked =
        std::getenv("CLUSTERCOMM_RANK") == nullptr && std::getenv("MLX_RANK") == nullptr;
    if (forked && g > 0 && o.ranks % g != 0) {
      throw bench::UsageError("-g " + std::to_string(g) + ": " + std::to_string(o.ranks) +
                              " ranks (-N) do not make whole groups of " + std::to_string(g));
    }
  } catch (const bench::UsageError& e) {
    std::fprintf(stderr, "clustercomm-perf: error: %s\n", e.what());
    return usage();
  }
  const bool launched =
      std::getenv("CLUSTERCOMM_RANK") != nullptr || std::getenv("MLX_RANK") != nullptr;
  try {
    if (launched) {
      Communicator c = Communicator::from_env();
      return run_rank(c, o);
    }
    // Launch o.ranks local ranks ourselves.
    // Rank 0 listens on a port the kernel picks (coordinator port 0) and writes it into a
    // pipe; the other ranks are forked with that port once it arrived.
    Config base;
    base.size = o.ranks;
    base.coordinator = "127.0.0.1:0";
    base.token = std::to_string(std::random_device{}()) + std::to_string(getpid());
    if (const char* t = std::getenv("CLUSTERCOMM_TIMEOUT_MS")) {
      base.timeout = std::chrono::milliseconds(std::atol(t));
    }
    const Config env = config_from_env();  // tuning variables still apply
    base.tuning = env.tuning;
    base.connections_per_peer = env.connections_per_peer;
    base.topology = env.topology;
    base.transport = env.transport;  // CLUSTERCOMM_TRANSPORT=tcp: loopback TCP, not shm
    int port_pipe[2];
    if (::pipe(port_pipe) != 0) {
      std::fprintf(stderr, "clustercomm-perf: pipe for rank 0's port: %s\n", std::strerror(errno));
      return 3;
    }
    std::vector<pid_t> kids;
    int port = 0;
    for (int r = 0; r < o.ranks; ++r) {
      if (r == 1) {
        // Rank 0's port, or nothing when it failed first (it said why on stderr).
        ::close(port_pipe[1]);
        pollfd p{port_pipe[0], POLLIN, 0};
        const int wait_ms = static_cast<int>(std::min<long long>(base.timeout.count(), 1 << 30));
        if (::poll(&p, 1, wait_ms) != 1 ||
            ::read(port_pipe[0], &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port))) {
          std::fprintf(stderr,
                       "clustercomm-perf: rank 0 did not report its coordinator port within "
                       "%d ms\n",
                       wait_ms);
          ::kill(kids[0], SIGKILL);
          break;
        }
        base.coordinator = "127.0.0.1:" + std::to_string(port);
      }
      const pid_t pid = fork();
      if (pid == 0) {
        Config cfg = base;
        cfg.rank = r;
        if (r == 0) {
          cfg.on_coordinator_listening = [&](int p) {
            if (::write(port_pipe[1], &p, sizeof(p)) != static_cast<ssize_t>(sizeof(p))) {
              throw Error(ErrorKind::kSystem,
                          "cannot pass the coordinator port to the "
                          "parent process: " +
                              std::string(std::strerror(errno)));
            }
          };
        }
        int rc = 3;
        try {
          Communicator c(cfg);
          rc = run_rank(c, o);
        } catch (const std::exception& e) {  // Error, or no memory for the buffers
          std::fprintf(stderr, "rank %d: %s\n", r, e.what());
        }
        std::fflush(stdout);
        _exit(rc);
      }
      kids.push_back(pid);
    }
    ::close(port_pipe[0]);
    if (o.ranks == 1) ::close(port_pipe[1]);
    int worst = 0;
    for (pid_t k : kids) {
      int st = 0;
      waitpid(k, &st, 0);
      const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      if (rc > worst) worst = rc;
    }
    return worst;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 3;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "clustercomm-perf: error: out of memory for buffers of -e %zu bytes\n",
                 o.sweep.max_bytes);
    return 3;
  }
}
