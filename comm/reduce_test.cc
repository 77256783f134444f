#include "comm/reduce.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace cc::comm {

TEST_CASE("integer sums and products wrap like two's complement") {
  std::vector<int8_t> a{127, -128, 100}, b{1, -1, 100};
  const void* srcs[2] = {a.data(), b.data()};
  std::vector<int8_t> out(3);
  reduce(DataType::kI8, ReduceOp::kSum, out.data(), srcs, 2, 3);
  CHECK(out == std::vector<int8_t>{-128, 127, -56});
  std::vector<uint16_t> x{65535, 300}, y{65535, 300};
  const void* s2[2] = {x.data(), y.data()};
  std::vector<uint16_t> o2(2);
  reduce(DataType::kU16, ReduceOp::kProd, o2.data(), s2, 2, 2);
  CHECK(o2[0] == 1);  // 65535^2 mod 2^16
  CHECK(o2[1] == static_cast<uint16_t>(300u * 300u));
}

TEST_CASE("fold order, aliasing and min/max") {
  std::vector<float> a{1, 5, -3}, b{2, 4, -4}, c{3, 3, 10};
  const void* srcs[3] = {a.data(), b.data(), c.data()};
  reduce(DataType::kF32, ReduceOp::kMin, b.data(), srcs, 3, 3);  // dst aliases a source
  CHECK(b == std::vector<float>{1, 3, -4});
  std::vector<int64_t> p{-5, 7}, q{3, -9};
  const void* s2[2] = {p.data(), q.data()};
  reduce(DataType::kI64, ReduceOp::kMax, p.data(), s2, 2, 2);
  CHECK(p == std::vector<int64_t>{3, 7});
}

TEST_CASE("f16 accumulates in float and rounds once") {
  // 2048 + 1 + 1 in f16: per-step rounding would give 2048 (ties to even twice); float
  // accumulation gives 2050 exactly.
  std::vector<uint16_t> a{float_to_f16(2048)}, b{float_to_f16(1)}, c{float_to_f16(1)};
  const void* srcs[3] = {a.data(), b.data(), c.data()};
  uint16_t out = 0;
  reduce(DataType::kF16, ReduceOp::kSum, &out, srcs, 3, 1);
  CHECK(f16_to_float(out) == 2050.0f);
  std::vector<uint16_t> big(5000, float_to_bf16(1.5f)), big2(5000, float_to_bf16(2.0f));
  const void* s2[2] = {big.data(), big2.data()};
  reduce(DataType::kBF16, ReduceOp::kProd, big.data(), s2, 2, big.size());
  CHECK(bf16_to_float(big[4999]) == 3.0f);
}

}  // namespace cc::comm
