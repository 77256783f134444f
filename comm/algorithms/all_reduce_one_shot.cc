// One-shot all-reduce: every rank sends its whole buffer to every other rank at once and
// reduces all n contributions locally, in rank order.
//
// Cost: a + (n-1)S/B (all links in parallel: S/B if each peer has its own link) + (n-1)S gamma.
// One latency, the minimum; bytes grow with n, so it serves small messages
// (Tuning::one_shot_max_bytes). Scratch: (n-1)S; at n = 2 none where the transport folds the
// peer's message straight into the output as it arrives (Transport::irecv_reduce: shared
// memory from its ring, verbs from its receive frames), the same bits as reduce() in rank order.
#include <array>
#include <span>
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/reduce.h"

namespace cc::comm {

void all_reduce_one_shot(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  const size_t bytes = count * size_of(t);
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
  bool sent = false;
  if (n == 2) {
    // The peer's buffer folded into out as it arrives, ours the other source. Out of place
    // the receive goes first (verbs then takes the frame without queueing it); in place our
    // send must have left `in` before the fold overwrites it (a small send over shared memory
    // or verbs is done once posted). Otherwise (TCP, or the send still in flight) the scratch
    // path below, with the send already posted.
    const size_t p = 1 - r;
    const Fold f{t, op, in, p < r};
    if (in != out) {
      if (c.t.irecv_reduce(static_cast<int>(p), out, bytes, f, recvs[p])) {
        c.t.isend(static_cast<int>(p), in, bytes, sends[p]);
        c.t.wait(recvs[p], c.deadline);
        if (!sends[p].done()) c.t.wait(sends[p], c.deadline);
        return;
      }
    } else {
      c.t.isend(static_cast<int>(p), in, bytes, sends[p]);
      sent = true;
      if (sends[p].done() && c.t.irecv_reduce(static_cast<int>(p), out, bytes, f, recvs[p])) {
        c.t.wait(recvs[p], c.deadline);
        return;
      }
    }
  }
  std::byte* scratch = c.get_scratch((n - 1) * bytes);
  for (size_t i = 1; i < n; ++i) {  // post receives, then sends, staggered by rank
    const size_t p = (r + i) % n;
    std::byte* slot = scratch + (p < r ? p : p - 1) * bytes;
    srcs[p] = slot;
    c.t.irecv(static_cast<int>(p), slot, bytes, recvs[p]);
  }
  for (size_t i = 1; i < n && !sent; ++i) {
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
