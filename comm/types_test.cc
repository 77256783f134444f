#include "comm/types.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

namespace cc::comm {

TEST_CASE("f16 round trip and rounding to nearest even") {
  CHECK(float_to_f16(1.0f) == 0x3c00);
  CHECK(float_to_f16(-2.0f) == 0xc000);
  CHECK(float_to_f16(65504.0f) == 0x7bff);
  CHECK(float_to_f16(65520.0f) == 0x7c00);                  // rounds up to infinity
  CHECK(float_to_f16(1.0f + 1.0f / 2048) == 0x3c00);        // tie -> even (down)
  CHECK(float_to_f16(1.0f + 3.0f / 2048) == 0x3c02);        // tie -> even (up)
  CHECK(float_to_f16(5.960464477539063e-08f) == 0x0001);    // smallest subnormal
  CHECK(float_to_f16(2.98023223876953125e-08f) == 0x0000);  // half of it: tie -> 0
  CHECK(std::isnan(f16_to_float(float_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half survives a round trip
    CHECK_EQ(float_to_f16(f16_to_float(static_cast<uint16_t>(h))), h);
  }
}

TEST_CASE("bf16 rounding to nearest even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(float_to_bf16(1.0f + 1.0f / 256) == 0x3f80);  // tie -> even
  CHECK(float_to_bf16(1.0f + 3.0f / 256) == 0x3f82);  // tie -> even (up)
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("type and op names") {
  CHECK(to_string(DataType::kBF16) == "bfloat16");
  CHECK(parse_data_type("f32") == DataType::kF32);
  CHECK(parse_data_type("uint16") == DataType::kU16);
  CHECK(!parse_data_type("f128"));
  CHECK(parse_reduce_op("max") == ReduceOp::kMax);
  CHECK(size_of(DataType::kI64) == 8);
}

}  // namespace cc::comm
