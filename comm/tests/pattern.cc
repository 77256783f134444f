#include "comm/tests/pattern.h"

#include <cstdint>
#include <cstring>

namespace cc::comm::test {
namespace {

bool is_float(DataType t) {
  return t == DataType::kF32 || t == DataType::kF64 || t == DataType::kF16 || t == DataType::kBF16;
}
bool is_unsigned(DataType t) {
  return t == DataType::kU8 || t == DataType::kU16 || t == DataType::kU32 || t == DataType::kU64;
}

int64_t value(DataType t, ReduceOp op, int rank, size_t i) {
  const uint64_t h = static_cast<uint64_t>(rank) * 7u + i * 13u;
  if (op == ReduceOp::kProd) {
    static constexpr int64_t kSigned[3] = {1, 2, -1}, kUnsigned[3] = {1, 2, 3};
    return is_unsigned(t) ? kUnsigned[h % 3] : kSigned[h % 3];
  }
  const auto v = static_cast<int64_t>(h % 17);
  return is_unsigned(t) ? v : v - 8;
}

void store(DataType t, void* buf, size_t i, int64_t v) {
  switch (t) {
    case DataType::kF32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::kF64:
      static_cast<double*>(buf)[i] = static_cast<double>(v);
      break;
    case DataType::kF16:
      static_cast<uint16_t*>(buf)[i] = float_to_f16(static_cast<float>(v));
      break;
    case DataType::kBF16:
      static_cast<uint16_t*>(buf)[i] = float_to_bf16(static_cast<float>(v));
      break;
    case DataType::kI8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case DataType::kI16:
      static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(v);
      break;
    case DataType::kI32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kI64:
      static_cast<int64_t*>(buf)[i] = v;
      break;
    case DataType::kU8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kU16:
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(v);
      break;
    case DataType::kU32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case DataType::kU64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
  }
}

}  // namespace

void fill(DataType t, ReduceOp op, int rank, void* buf, size_t count, size_t first) {
  for (size_t i = 0; i < count; ++i) store(t, buf, i, value(t, op, rank, first + i));
}

void expected(DataType t, ReduceOp op, int n, void* buf, size_t count, size_t first) {
  for (size_t i = 0; i < count; ++i) {
    int64_t acc = value(t, op, 0, first + i);
    for (int r = 1; r < n; ++r) {
      const int64_t v = value(t, op, r, first + i);
      switch (op) {
        case ReduceOp::kSum:
          acc += v;
          break;
        case ReduceOp::kProd:
          acc *= v;
          break;
        case ReduceOp::kMin:
          acc = v < acc ? v : acc;
          break;
        case ReduceOp::kMax:
          acc = v > acc ? v : acc;
          break;
      }
    }
    // Float types hold these exactly (|acc| <= 6561 for prod would not fit f16/bf16, but
    // float patterns use {1, 2, -1}: |prod| <= 256).
    (void)is_float;
    store(t, buf, i, acc);
  }
}

std::string compare(DataType t, const void* got, const void* want, size_t count) {
  const size_t e = size_of(t);
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(g + i * e, w + i * e, e) != 0) {
      uint64_t gv = 0, wv = 0;
      std::memcpy(&gv, g + i * e, e);
      std::memcpy(&wv, w + i * e, e);
      return "element " + std::to_string(i) + " of " + std::to_string(count) + " (" +
             std::string(to_string(t)) + "): got bits 0x" + std::to_string(gv) + ", want 0x" +
             std::to_string(wv);
    }
  }
  return "";
}

std::vector<float> random_floats(int rank, size_t count, uint32_t seed) {
  std::vector<float> v(count);
  uint32_t x = seed + static_cast<uint32_t>(rank) * 7919u;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  }
  return v;
}

}  // namespace cc::comm::test
