#include "comm/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace cc::comm {
namespace {

struct F16 {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

// Acc: the type arithmetic happens in. Wide unsigned for integer sum/prod (wraps, no UB),
// the element type itself for integer min/max, float for f16/bf16.
template <class T, bool kArith>
struct Traits {
  using Acc =
      std::conditional_t<!kArith, T, std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>>;
  static Acc load(T v) {
    if constexpr (kArith) {
      return static_cast<Acc>(static_cast<std::make_unsigned_t<T>>(v));
    } else {
      return v;
    }
  }
  static T store(Acc a) {
    if constexpr (kArith) {
      return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a));
    } else {
      return a;
    }
  }
};
template <bool kArith>
struct Traits<float, kArith> {
  using Acc = float;
  static float load(float v) { return v; }
  static float store(float a) { return a; }
};
template <bool kArith>
struct Traits<double, kArith> {
  using Acc = double;
  static double load(double v) { return v; }
  static double store(double a) { return a; }
};
template <bool kArith>
struct Traits<F16, kArith> {
  using Acc = float;
  static float load(F16 v) { return f16_to_float(v.bits); }
  static F16 store(float a) { return F16{float_to_f16(a)}; }
};
template <bool kArith>
struct Traits<BF16, kArith> {
  using Acc = float;
  static float load(BF16 v) { return bf16_to_float(v.bits); }
  static BF16 store(float a) { return BF16{float_to_bf16(a)}; }
};

struct Sum {
  template <class A>
  static A apply(A a, A b) {
    return static_cast<A>(a + b);
  }
};
struct Prod {
  template <class A>
  static A apply(A a, A b) {
    return static_cast<A>(a * b);
  }
};
struct Min {
  template <class A>
  static A apply(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(b)) return b;
    }
    return b < a ? b : a;
  }
};
struct Max {
  template <class A>
  static A apply(A a, A b) {
    if constexpr (std::is_floating_point_v<A>) {
      if (std::isnan(b)) return b;
    }
    return a < b ? b : a;
  }
};

constexpr size_t kBlock = 1024;

template <class T, class Op, bool kArith>
void fold(void* dst_v, const void* const* srcs_v, size_t nsrc, size_t count) {
  using Tr = Traits<T, kArith>;
  using Acc = typename Tr::Acc;
  T* dst = static_cast<T*>(dst_v);
  Acc acc[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t n = std::min(kBlock, count - base);
    const T* s0 = static_cast<const T*>(srcs_v[0]) + base;
    for (size_t i = 0; i < n; ++i) acc[i] = Tr::load(s0[i]);
    for (size_t k = 1; k < nsrc; ++k) {
      const T* s = static_cast<const T*>(srcs_v[k]) + base;
      for (size_t i = 0; i < n; ++i) acc[i] = Op::apply(acc[i], Tr::load(s[i]));
    }
    T* d = dst + base;
    for (size_t i = 0; i < n; ++i) d[i] = Tr::store(acc[i]);
  }
}

// Two sources, no conversion: the common dst = a op b case as one tight loop.
template <class T, class Op>
void fold2(T* dst, const T* a, const T* b, size_t count) {
  for (size_t i = 0; i < count; ++i) dst[i] = Op::apply(a[i], b[i]);
}

template <class T>
void by_op(ReduceOp op, void* dst, const void* const* srcs, size_t nsrc, size_t count) {
  constexpr bool kInt = std::is_integral_v<T>;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (nsrc == 2 && op == ReduceOp::kSum) {
      return fold2<T, Sum>(static_cast<T*>(dst), static_cast<const T*>(srcs[0]),
                           static_cast<const T*>(srcs[1]), count);
    }
  }
  switch (op) {
    case ReduceOp::kSum:
      return fold<T, Sum, kInt>(dst, srcs, nsrc, count);
    case ReduceOp::kProd:
      return fold<T, Prod, kInt>(dst, srcs, nsrc, count);
    case ReduceOp::kMin:
      return fold<T, Min, false>(dst, srcs, nsrc, count);
    case ReduceOp::kMax:
      return fold<T, Max, false>(dst, srcs, nsrc, count);
  }
}

}  // namespace

void reduce(DataType type, ReduceOp op, void* dst, const void* const* srcs, size_t nsrc,
            size_t count) {
  if (count == 0 || nsrc == 0) return;
  if (nsrc == 1) {
    if (dst != srcs[0]) std::memmove(dst, srcs[0], count * size_of(type));
    return;
  }
  switch (type) {
    case DataType::kF32:
      return by_op<float>(op, dst, srcs, nsrc, count);
    case DataType::kF64:
      return by_op<double>(op, dst, srcs, nsrc, count);
    case DataType::kF16:
      return by_op<F16>(op, dst, srcs, nsrc, count);
    case DataType::kBF16:
      return by_op<BF16>(op, dst, srcs, nsrc, count);
    case DataType::kI8:
      return by_op<int8_t>(op, dst, srcs, nsrc, count);
    case DataType::kI16:
      return by_op<int16_t>(op, dst, srcs, nsrc, count);
    case DataType::kI32:
      return by_op<int32_t>(op, dst, srcs, nsrc, count);
    case DataType::kI64:
      return by_op<int64_t>(op, dst, srcs, nsrc, count);
    case DataType::kU8:
      return by_op<uint8_t>(op, dst, srcs, nsrc, count);
    case DataType::kU16:
      return by_op<uint16_t>(op, dst, srcs, nsrc, count);
    case DataType::kU32:
      return by_op<uint32_t>(op, dst, srcs, nsrc, count);
    case DataType::kU64:
      return by_op<uint64_t>(op, dst, srcs, nsrc, count);
  }
}

bool folds_exactly_in_steps(DataType type) {
  return type != DataType::kF16 && type != DataType::kBF16;
}

}  // namespace cc::comm
