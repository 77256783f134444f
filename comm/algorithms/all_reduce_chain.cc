// Chain all-reduce: a pipelined chain 0 -> 1 -> ... -> n-1 that folds every chunk in rank order,
// then a pipelined broadcast chain n-1 -> 0 -> 1 -> ... -> n-2. Rank r receives from r-1 and
// sends to r+1 only (mod n, as on a ring). In the reduce chain rank r folds its own
// contribution into the partial sum x_0 op ... op x_(r-1) from the left (straight out of the
// receive rings or frames where the transport can, Transport::irecv_reduce) and passes it on;
// rank n-1's fold is the result, which it sends into the broadcast chain.
//
// Why: it serves large messages when the ranks outnumber the cores they run on
// (Transport::crowded) and a message is a memory copy (Transport::messages_are_copies: shared
// memory). There the cores, not the links, are the bottleneck, and memory traffic is the cost:
// the chain moves as many bytes in all as the ring (2(n-1) hops of S bytes, against the ring's
// 2n(n-1) shard hops of S/n), folds straight from the rings, and each rank waits on one
// neighbour instead of all of them. Measured at n = 4 on 2 cores over shared memory, 2 MiB:
// 0.71-0.90 ms against the direct algorithm's 1.40-1.73 (comm/README.md); over TCP loopback,
// where each hop is system calls, 1.6-2x slower than direct, so TCP does not use it. Unlike the
// ring, it folds in rank order, as the direct algorithm does: for every type whose stepwise
// fold equals reduce()'s (folds_exactly_in_steps: all but f16/bf16, which reduce() accumulates
// in float across all sources and rounds once) the results are bit-identical to the direct
// algorithm's, which every other world uses.
//
// Cost: 2(n-1)a + 2S/B + (k-1) chunk/B on the critical path (k chunks), S gamma per rank. On
// uncrowded cores strictly worse than the direct algorithm, which is why it is not used there.
// Scratch: none where the transport folds from its receive buffers, else window * chunk bytes.
#include <algorithm>
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/algorithms/shards.h"
#include "comm/reduce.h"

namespace cc::comm {
namespace {

// Measured at n = 4 on 2 cores over shared memory, 128 KiB to 32 MiB: 16 chunks beat 1, 4 and
// 8 at most sizes (2 MiB: 0.71-0.90 ms against 1.06-1.21 with the transport's 256 KiB chunk).
constexpr size_t kMinChunks = 16;
constexpr size_t kMinChunkBytes = 4096;

}  // namespace

void all_reduce_chain(Ctx& c, const void* in_v, void* out_v, size_t count, DataType t,
                      ReduceOp op) {
  const int n = c.size, r = c.rank;
  const int left = static_cast<int>(mod(r - 1, n)), right = static_cast<int>(mod(r + 1, n));
  const auto* in = static_cast<const std::byte*>(in_v);
  auto* out = static_cast<std::byte*>(out_v);
  const size_t e = size_of(t);
  // At least kMinChunks chunks (of at least kMinChunkBytes), so the chain pipelines from the
  // smallest size it serves; at most the transport's chunk.
  const size_t C = std::min(c.chunk_elems(t), std::max((kMinChunkBytes + e - 1) / e,
                                                       (count + kMinChunks - 1) / kMinChunks));
  const size_t k = num_chunks(count, C);
  const size_t W = std::max<size_t>(1, std::min(c.tuning.window_chunks, k));
  auto at = [&](size_t ch) { return ch * C * e; };
  auto bytes_of = [&](size_t ch) { return chunk_len(count, C, ch) * e; };
  const bool first = r == 0, last = r == n - 1;
  // Ranks 0..n-2 send into the reduce chain (rank 0 its input, the others their partial sum);
  // ranks n-1, 0, .., n-3 send into the broadcast chain (rank n-2 ends it).
  const bool sends_sum = !last, forwards_result = r != n - 2;
  std::vector<Request> folds(first ? 0 : W), sums(sends_sum ? k : 0), results(k), forwards(k);

  // 1. The reduce chain.
  if (first) {
    for (size_t ch = 0; ch < k; ++ch) c.t.isend(right, in + at(ch), bytes_of(ch), sums[ch]);
  } else {
    std::byte* scratch = nullptr;  // window slots, where the transport cannot fold
    int folding = -1;              // 1: folding, 0: not, -1: not asked yet
    auto post = [&](size_t ch) {
      Request& q = folds[ch % W];
      if (folding != 0) {
        // incoming first: (x_0 op .. op x_(r-1)) op x_r, as reduce() takes them
        const Fold f{t, op, in + at(ch), true};
        if (c.t.irecv_reduce(left, out + at(ch), bytes_of(ch), f, q)) {
          folding = 1;
          return;
        }
        folding = 0;
        scratch = c.get_scratch(W * C * e);
      }
      c.t.irecv(left, scratch + (ch % W) * C * e, bytes_of(ch), q);
    };
    for (size_t ch = 0; ch < W; ++ch) post(ch);
    for (size_t ch = 0; ch < k; ++ch) {
      c.t.wait(folds[ch % W], c.deadline);
      if (folding != 1) {
        const void* srcs[2] = {scratch + (ch % W) * C * e, in + at(ch)};
        reduce(t, op, out + at(ch), srcs, 2, chunk_len(count, C, ch));
      }
      if (sends_sum) c.t.isend(right, out + at(ch), bytes_of(ch), sums[ch]);
      if (last) c.t.isend(right, out + at(ch), bytes_of(ch), forwards[ch]);
      if (ch + W < k) post(ch + W);
    }
  }
  if (last) {
    wait_all(c.t, forwards, c.deadline);
    return;
  }

  // 2. The broadcast chain: the result lands in out, over this rank's partial sum (rank 0: over
  // nothing of its own; in place, over its input), so each chunk's send into the reduce chain
  // must be done before its result is received.
  auto post_result = [&](size_t ch) {
    c.t.wait(sums[ch], c.deadline);
    c.t.irecv(left, out + at(ch), bytes_of(ch), results[ch]);
  };
  for (size_t ch = 0; ch < W; ++ch) post_result(ch);
  for (size_t ch = 0; ch < k; ++ch) {
    c.t.wait(results[ch], c.deadline);
    if (forwards_result) c.t.isend(right, out + at(ch), bytes_of(ch), forwards[ch]);
    if (ch + W < k) post_result(ch + W);
  }
  if (forwards_result) wait_all(c.t, forwards, c.deadline);
}

}  // namespace cc::comm
