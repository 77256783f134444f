// Direct reduce-scatter: every rank sends block q of its input straight to rank q, all links
// at once; rank r folds the n contributions to block r in rank order, chunk by chunk as they
// arrive (the first phase of all_reduce_direct.cc).
//
// Cost: a + (n-1)S/(nB) on one shared link; a + S/(nB) with a link per peer (the bound),
// plus (n-1)S/n gamma overlapped. S = bytes of the whole input.
#include "comm/algorithms/direct.h"

namespace cc::comm {

void reduce_scatter_direct(Ctx& c, const void* in, void* out, size_t count, DataType t,
                           ReduceOp op) {
  const Shards s = make_shards(count * static_cast<size_t>(c.size), static_cast<size_t>(c.size));
  direct_reduce_scatter(c, static_cast<const std::byte*>(in), s, static_cast<std::byte*>(out), t,
                        op, nullptr);
}

}  // namespace cc::comm
