// Test inputs and references: rank r's element i is a small integer chosen so that sums and
// products are exact in every type (f16, bf16 included) or wrap identically to the library's
// two's-complement arithmetic, so the expected result does not depend on reduction order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/types.h"

namespace cc::comm::test {

/// Fills count elements of rank `rank`'s input for `op`, starting at logical index `first`.
void fill(DataType t, ReduceOp op, int rank, void* buf, size_t count, size_t first = 0);
/// The reduction of all n ranks' fill() values, elements [first, first + count).
void expected(DataType t, ReduceOp op, int n, void* buf, size_t count, size_t first = 0);
/// "" when equal, else a description of the first differing element.
std::string compare(DataType t, const void* got, const void* want, size_t count);

/// Random floats in [-0.5, 0.5) for `rank`, the same on every run for one seed.
std::vector<float> random_floats(int rank, size_t count, uint32_t seed);

}  // namespace cc::comm::test
