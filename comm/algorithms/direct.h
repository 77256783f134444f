// The direct (all links at once) reduce-scatter engine shared by all_reduce_direct and
// reduce_scatter_direct; see all_reduce_direct.cc for the algorithm and its cost.
#pragma once

#include "comm/algorithms/algorithm.h"
#include "comm/algorithms/shards.h"

namespace cc::comm {

/// Rank r receives shard r of every rank's `in` (shards `s`), reduces it in rank order into
/// `out_r`. With `gather_out` set it also sends each reduced chunk to every peer at once and
/// receives every other shard into gather_out (= the all-reduce result buffer).
void direct_reduce_scatter(Ctx& c, const std::byte* in, const Shards& s, std::byte* out_r,
                           DataType t, ReduceOp op, std::byte* gather_out);

}  // namespace cc::comm
