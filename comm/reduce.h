// Reduction kernels: the only arithmetic in libclustercomm.
//
// reduce() folds sources in the order given: dst = ((s0 op s1) op s2) ... op s(k-1), element
// by element. Callers pass sources in rank order, so every rank computes bit-identical
// results. f16/bf16 accumulate in float across all k sources and round to nearest even once;
// integers wrap (two's complement); min/max of floats: a NaN source propagates.
// Cost: one pass over k*count elements, about memory bandwidth (6 GB/s dst += src:
// docs/platform.md#reference-figures).
#pragma once

#include <cstddef>

#include "comm/types.h"

namespace cc::comm {

/// dst may alias any source (each block of elements is read before it is written).
/// `nsrc` >= 1; with nsrc == 1 it copies (or converts nothing).
void reduce(DataType type, ReduceOp op, void* dst, const void* const* srcs, size_t nsrc,
            size_t count);

/// True when folding k sources one at a time, storing the result between steps
/// (reduce(dst, {dst, s_i}, 2) for i = 1..k-1), gives reduce()'s bits with all k at once: every
/// type but f16 and bf16, which reduce() accumulates in float across all sources and rounds
/// once (integers wrap either way). Algorithms that pass partial sums between ranks in rank
/// order (all_reduce_chain.cc) rely on it to stay bit-identical to the direct algorithm.
bool folds_exactly_in_steps(DataType type);

}  // namespace cc::comm
