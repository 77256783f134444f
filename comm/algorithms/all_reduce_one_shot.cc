// One-shot all-reduce: every rank sends its whole buffer to every other rank at once and
// reduces all n contributions locally, in rank order.
//
// Cost: a + (n-1)S/B (all links in parallel: S/B if each peer has its own link) + (n-1)S gamma.
// One latency, the minimum; bytes grow with n, so it serves small messages
// (Tuning::one_shot_max_bytes). Scratch: (n-1)S.
#include <array>
#include <span>
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/reduce.h"

namespace cc::comm {

void all_reduce_one_shot(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  const size_t bytes = count * size_of(t);
  std::byte* scratch = c.get_scratch((n - 1) * bytes);
  // Up to kInline ranks without a heap allocation: a call here takes well under a microsecond
  // over shared memory, and three allocations were a visible part of it.
  constexpr size_t kInline = 8;
  std::array<Request, kInline> recv_here, send_here;
  std::array<const void*, kInline> src_here;
  std::vector<Request> recv_heap, send_heap;
  std::vector<const void*> src_heap;
  if (n > kInline) {
    recv_heap.resize(n);
    send_heap.resize(n);
    src_heap.resize(n);
  }
  const std::span<Request> recvs(n > kInline ? recv_heap.data() : recv_here.data(), n);
  const std::span<Request> sends(n > kInline ? send_heap.data() : send_here.data(), n);
  const std::span<const void*> srcs(n > kInline ? src_heap.data() : src_here.data(), n);
  for (size_t i = 1; i < n; ++i) {  // post receives, then sends, staggered by rank
    const size_t p = (r + i) % n;
    std::byte* slot = scratch + (p < r ? p : p - 1) * bytes;
    srcs[p] = slot;
    c.t.irecv(static_cast<int>(p), slot, bytes, recvs[p]);
  }
  for (size_t i = 1; i < n; ++i) {
    const size_t p = (r + n - i) % n;
    c.t.isend(static_cast<int>(p), in, bytes, sends[p]);
  }
  srcs[r] = in;
  for (size_t p = 0; p < n; ++p) {
    if (p != r) c.t.wait(recvs[p], c.deadline);
  }
  // In place, our buffer is still being sent: finish that before overwriting it.
  if (in == out) wait_all(c.t, sends, c.deadline);
  reduce(t, op, out, srcs.data(), n, count);
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
