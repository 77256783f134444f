// Direct all-gather: every rank sends its block straight to every other rank, all links at
// once, and receives each block straight into its place in the output (no copies).
//
// Cost: a + (n-1)S/B on one shared link; a + S/B with a link per peer (full mesh), the
// bound. S = bytes per rank.
#include <cstring>
#include <vector>

#include "comm/algorithms/algorithm.h"

namespace cc::comm {

void all_gather_direct(Ctx& c, const void* in, void* out, size_t bytes) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  auto* o = static_cast<std::byte*>(out);
  std::vector<Request> recvs(n), sends(n);
  for (size_t d = 1; d < n; ++d) {
    const size_t p = (r + n - d) % n;
    c.t.irecv(static_cast<int>(p), o + p * bytes, bytes, recvs[p]);
  }
  for (size_t d = 1; d < n; ++d) {
    const size_t p = (r + d) % n;
    c.t.isend(static_cast<int>(p), in, bytes, sends[p]);
  }
  if (o + r * bytes != in && bytes > 0) std::memcpy(o + r * bytes, in, bytes);
  wait_all(c.t, recvs, c.deadline);
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
