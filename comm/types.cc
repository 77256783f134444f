#include "comm/types.h"

#include <bit>
#include <cstring>

namespace cc::comm {

size_t size_of(DataType t) {
  switch (t) {
    case DataType::kF64:
    case DataType::kI64:
    case DataType::kU64:
      return 8;
    case DataType::kF32:
    case DataType::kI32:
    case DataType::kU32:
      return 4;
    case DataType::kF16:
    case DataType::kBF16:
    case DataType::kI16:
    case DataType::kU16:
      return 2;
    case DataType::kI8:
    case DataType::kU8:
      return 1;
  }
  return 1;
}

std::string_view to_string(DataType t) {
  switch (t) {
    case DataType::kF32:
      return "float";
    case DataType::kF64:
      return "double";
    case DataType::kF16:
      return "half";
    case DataType::kBF16:
      return "bfloat16";
    case DataType::kI8:
      return "int8";
    case DataType::kI16:
      return "int16";
    case DataType::kI32:
      return "int32";
    case DataType::kI64:
      return "int64";
    case DataType::kU8:
      return "uint8";
    case DataType::kU16:
      return "uint16";
    case DataType::kU32:
      return "uint32";
    case DataType::kU64:
      return "uint64";
  }
  return "?";
}

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
  }
  return "?";
}

std::optional<DataType> parse_data_type(std::string_view name) {
  static constexpr std::string_view kShort[] = {"f32", "f64", "f16", "bf16", "i8",  "i16",
                                                "i32", "i64", "u8",  "u16",  "u32", "u64"};
  for (size_t i = 0; i < std::size(kAllDataTypes); ++i) {
    if (name == kShort[i] || name == to_string(kAllDataTypes[i])) return kAllDataTypes[i];
  }
  return std::nullopt;
}

std::optional<ReduceOp> parse_reduce_op(std::string_view name) {
  for (ReduceOp op : kAllReduceOps) {
    if (name == to_string(op)) return op;
  }
  return std::nullopt;
}

uint16_t float_to_f16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {  // result is subnormal or zero: 2^-14 > |f|
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to 0
    const uint32_t exp = abs >> 23;
    const uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - exp;  // 14..24 bits to drop beyond the 10 kept
    const uint32_t kept = mant >> (shift);
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    uint32_t r = kept;
    if (rest > half || (rest == half && (kept & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // normal: rebias exponent (127 -> 15) and round the 13 dropped mantissa bits
  uint32_t r = abs - 0x38000000u;  // exponent - 112 << 23
  r += 0xfffu + ((r >> 13) & 1u);
  return static_cast<uint16_t>(sign | (r >> 13));
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t r = x + 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(r >> 16);
}

float bf16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

}  // namespace cc::comm
