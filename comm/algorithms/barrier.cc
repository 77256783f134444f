// Barrier: every rank sends an empty message to every other rank and waits for all of them.
// Cost: a (all links at once); n-1 messages per rank.
#include <vector>

#include "comm/algorithms/algorithm.h"

namespace cc::comm {

void barrier_all(Ctx& c) {
  const size_t n = static_cast<size_t>(c.size), r = static_cast<size_t>(c.rank);
  std::vector<Request> recvs(n), sends(n);
  for (size_t p = 0; p < n; ++p) {
    if (p != r) c.t.irecv(static_cast<int>(p), nullptr, 0, recvs[p]);
  }
  for (size_t d = 1; d < n; ++d) {
    const size_t p = (r + d) % n;
    c.t.isend(static_cast<int>(p), nullptr, 0, sends[p]);
  }
  wait_all(c.t, recvs, c.deadline);
  wait_all(c.t, sends, c.deadline);
}

}  // namespace cc::comm
