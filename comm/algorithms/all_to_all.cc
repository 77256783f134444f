// Direct all-to-all (all_to_all and all_to_allv): every rank posts a receive from every peer
// and a send to every peer at once, each block straight from the input to its place in the
// peer's output (no copies but the rank's own block), so every cable of the mesh carries one
// block each way at the same time.
//
// Cost: a + S(n-1)/(nB) on one shared link; a + S/(nB) with a link per peer (full mesh), the
// bound. S = bytes this rank sends in all (its whole input), equal blocks of S/n. nccl-tests'
// alltoall busbw = algbw (n-1)/n, with algbw = S/t.
//
// Zero-byte blocks still travel (a header only): a rank whose counts disagree with its peer's
// then fails at once with kProtocol naming the peer, not at the timeout.
#include <cstring>
#include <vector>

#include "comm/algorithms/algorithm.h"

namespace cc::comm {

void all_to_all_direct(Ctx& c, const std::byte* in, std::span<const size_t> in_off,
                       std::span<const size_t> in_bytes, std::byte* out,
                       std::span<const size_t> out_off, std::span<const size_t> out_bytes) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  std::vector<Request> recvs(n), sends(n);
  for (size_t d = 1; d < n; ++d) {
    const size_t p = (r + n - d) % n;
    c.t.irecv(static_cast<int>(p), out + out_off[p], out_bytes[p], recvs[p]);
  }
  for (size_t d = 1; d < n; ++d) {
    const size_t p = (r + d) % n;
    c.t.isend(static_cast<int>(p), in + in_off[p], in_bytes[p], sends[p]);
  }
  if (in_bytes[r] > 0) std::memcpy(out + out_off[r], in + in_off[r], in_bytes[r]);
  wait_all(c.t, recvs, c.deadline);
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
