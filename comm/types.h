// Element types and reduction operators of libclustercomm, and the f16/bf16 conversions.
// Buffers are untyped (void*) in the API; counts are in elements, sizes in bytes, both 64-bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "comm/export.h"

namespace cc::comm {

enum class DataType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kI8,
  kI16,
  kI32,
  kI64,
  kU8,
  kU16,
  kU32,
  kU64,
};
inline constexpr DataType kAllDataTypes[] = {DataType::kF32,  DataType::kF64, DataType::kF16,
                                             DataType::kBF16, DataType::kI8,  DataType::kI16,
                                             DataType::kI32,  DataType::kI64, DataType::kU8,
                                             DataType::kU16,  DataType::kU32, DataType::kU64};

/// f16 and bf16 reduce via float and round to nearest even; integers wrap (two's complement).
enum class ReduceOp : uint8_t { kSum, kProd, kMin, kMax };
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                             ReduceOp::kMax};

/// Bytes per element: 1, 2, 4 or 8.
CLUSTERCOMM_API size_t size_of(DataType t);
/// nccl-tests names: "float", "double", "half", "bfloat16", "int8", ..., "uint64".
CLUSTERCOMM_API std::string_view to_string(DataType t);
CLUSTERCOMM_API std::string_view to_string(ReduceOp op);  // "sum", "prod", "min", "max"
/// Also "f32", "i32", ...
CLUSTERCOMM_API std::optional<DataType> parse_data_type(std::string_view name);
CLUSTERCOMM_API std::optional<ReduceOp> parse_reduce_op(std::string_view name);

/// IEEE binary16 <-> float. Rounds to nearest even; keeps NaN a NaN, overflows to infinity.
CLUSTERCOMM_API uint16_t float_to_f16(float f);
CLUSTERCOMM_API float f16_to_float(uint16_t h);
/// bfloat16 <-> float. Rounds to nearest even; keeps NaN a NaN.
CLUSTERCOMM_API uint16_t float_to_bf16(float f);
CLUSTERCOMM_API float bf16_to_float(uint16_t b);

}  // namespace cc::comm
