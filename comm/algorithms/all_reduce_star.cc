// Star all-reduce: every rank sends its buffer to rank 0, which reduces all n contributions in
// rank order (as one-shot does, so the results are bit-identical to one-shot's) and sends the
// result back to every rank.
//
// Cost: 2a + 2(n-1)S/B (rank 0's link carries every byte, twice) + (n-1)S gamma. Two
// latencies instead of one-shot's one, but 2(n-1) messages in all instead of n(n-1). It serves
// small messages when the ranks outnumber the cores they run on (Transport::crowded): there
// every send and receive is a syscall that takes CPU from a rank sharing the core, the CPU is
// the bottleneck rather than the links, and fewer messages win. Measured at n = 4 on 2 cores
// (TCP loopback, 8 B): one-shot 56 syscalls and 159 us of CPU per call (both cores busy), star
// 31 syscalls and 72 us; per call 35 us against one-shot's 55 (docs/platform.md#open-mpi-and-gloo).
// Not over shared memory at 2 ranks a core for messages of a few KiB: there a message is a
// copy, and one-shot's single phase wins (communicator.cc).
// Scratch on rank 0: (n-1)S.
#include <vector>

#include "comm/algorithms/algorithm.h"
#include "comm/reduce.h"

namespace cc::comm {

void all_reduce_star(Ctx& c, const void* in, void* out, size_t count, DataType t, ReduceOp op) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  const size_t bytes = count * size_of(t);
  if (r != 0) {
    Request send, recv;
    if (in != out) c.t.irecv(0, out, bytes, recv);
    c.t.isend(0, in, bytes, send);
    if (in == out) {  // our buffer is still being sent: finish that before the result lands
      c.t.wait(send, c.deadline);
      c.t.irecv(0, out, bytes, recv);
    }
    c.t.wait(recv, c.deadline);
    if (!send.done()) c.t.wait(send, c.deadline);
    return;
  }
  std::byte* scratch = c.get_scratch((n - 1) * bytes);
  std::vector<Request> recvs(n), sends(n);
  std::vector<const void*> srcs{in};  // rank order: ours, then the slots of ranks 1..n-1
  for (size_t p = 1; p < n; ++p) {
    std::byte* slot = scratch + (p - 1) * bytes;
    srcs.push_back(slot);
    c.t.irecv(static_cast<int>(p), slot, bytes, recvs[p]);
  }
  for (size_t p = 1; p < n; ++p) c.t.wait(recvs[p], c.deadline);
  reduce(t, op, out, srcs.data(), n, count);
  for (size_t p = 1; p < n; ++p) c.t.isend(static_cast<int>(p), out, bytes, sends[p]);
  for (size_t p = 1; p < n; ++p) c.t.wait(sends[p], c.deadline);
}

}  // namespace cc::comm
