// Vectorisation: every loop over native types is a plain loop that GCC vectorises (checked with
// -fopt-info-vec), compiled twice with target_clones: SSE2 (the x86-64 baseline of the library
// build; no -march=native) and AVX2, chosen once at load time by the CPU. The 16-bit float types
// are reduced in blocks that fit L1: widen the block to float32, reduce there (vectorised), round
// back once. float16 widening/rounding: half_convert.h (F16C when the CPU has it).
#include "reduce_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "half.h"
#include "half_convert.h"
#include "ringsync/errors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#if defined(__SANITIZE_THREAD__)
// target_clones makes an IFUNC whose resolver runs while the library is relocated, before the
// ThreadSanitizer runtime is initialised; TSan instruments the resolver, so every process crashed
// at load. TSan builds use the default clone only.
#define RINGSYNC_SIMD_CLONES
#else
#define RINGSYNC_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#else
#define RINGSYNC_SIMD_CLONES
#endif

namespace ringsync::detail {
namespace {

// Signed overflow is undefined in C++; sums and products of signed integers wrap like the
// hardware does by computing in the unsigned type of the same width.
template <typename T> inline T wrappingAdd(T a, T b) {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}
template <typename T> inline T wrappingMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Promote through unsigned int at least, so uint16-like promotions cannot overflow int.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

struct SumOp {
  template <typename V> static V apply(V a, V b) { return wrappingAdd(a, b); }
};
struct ProdOp {
  template <typename V> static V apply(V a, V b) { return wrappingMul(a, b); }
};
struct MinOp {
  template <typename V> static V apply(V a, V b) { return b < a ? b : a; }
};
struct MaxOp {
  template <typename V> static V apply(V a, V b) { return a < b ? b : a; }
};

// Integers divide in (at least) int, truncating toward zero; floats divide exactly rounded.
template <typename V> inline V divideValue(V value, int divisor) { return static_cast<V>(value / divisor); }

// ---- native types: one loop each, cloned for SSE2 and AVX2 ------------------------------------

template <typename T, typename Op>
RINGSYNC_SIMD_CLONES void reduceLoop(T* out, const T* a, const T* b, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) out[i] = Op::apply(a[i], b[i]);
}

template <typename T>
RINGSYNC_SIMD_CLONES void sumAndDivideLoop(T* out, const T* a, const T* b, std::size_t count, int divisor) {
  for (std::size_t i = 0; i < count; ++i) out[i] = divideValue(wrappingAdd(a[i], b[i]), divisor);
}

template <typename T> RINGSYNC_SIMD_CLONES void divideLoop(T* data, std::size_t count, int divisor) {
  for (std::size_t i = 0; i < count; ++i) data[i] = divideValue(data[i], divisor);
}

// NaN or Inf: all exponent bits set. Integer compares on the bits vectorise (isfinite does not);
// the SSE2 clone of the float64 version stays scalar (no 64-bit compare before SSE4.1).
template <typename T> RINGSYNC_SIMD_CLONES bool nonFiniteLoop(const T* data, std::size_t count) {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  constexpr Bits kExponent = static_cast<Bits>(sizeof(T) == 8 ? 0x7ff0000000000000ull : 0x7f800000ull);
  Bits found = 0;
  for (std::size_t i = 0; i < count; ++i) {
    Bits bits;
    std::memcpy(&bits, data + i, sizeof bits);
    found |= (bits & kExponent) == kExponent ? Bits{1} : Bits{0};
  }
  return found != 0;
}

// ---- 16-bit floats: widen a block, work in float32, round back ---------------------------------

constexpr std::size_t kHalfBlock = 256;  // two float32 blocks of 1 KiB stay in L1

// Called once per block of kHalfBlock values, so each codec keeps the function it calls in a
// pointer chosen once (for float16, by the CPU: half_convert.h), not behind another call.
using WidenFn = Float16ToFloat32Fn;  // (in, out, count)
using NarrowFn = Float32ToFloat16Fn;

struct Float16Codec {
  static inline const WidenFn widen = float16ToFloat32Converter();
  static inline const NarrowFn narrow = float32ToFloat16Converter();
};

// bfloat16 is the top half of a float32: both directions are integer arithmetic that vectorises.
RINGSYNC_SIMD_CLONES void widenBfloat16(const std::uint16_t* in, float* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t bits = std::uint32_t{in[i]} << 16;
    std::memcpy(out + i, &bits, sizeof bits);
  }
}
RINGSYNC_SIMD_CLONES void narrowBfloat16(const float* in, std::uint16_t* out, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, in + i, sizeof bits);
    const std::uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;  // as floatToBfloat16
    const std::uint32_t quietNan = (bits >> 16) | 0x40u;
    out[i] = static_cast<std::uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quietNan : rounded);
  }
}

struct Bfloat16Codec {
  static inline const WidenFn widen = widenBfloat16;
  static inline const NarrowFn narrow = narrowBfloat16;
};

// Runs body(x, y, begin, n) on float32 copies of blocks of `a` (and `b` when given).
template <typename Codec, typename Body>
void forEachHalfBlock(const void* a, const void* b, std::size_t count, Body&& body) {
  alignas(64) float x[kHalfBlock];
  alignas(64) float y[kHalfBlock];
  const auto* pa = static_cast<const std::uint16_t*>(a);
  const auto* pb = static_cast<const std::uint16_t*>(b);
  for (std::size_t begin = 0; begin < count; begin += kHalfBlock) {
    const std::size_t n = std::min(kHalfBlock, count - begin);
    Codec::widen(pa + begin, x, n);
    if (pb) Codec::widen(pb + begin, y, n);
    body(x, y, begin, n);
  }
}

template <typename Codec, typename Op> void reduceHalf(void* out, const void* a, const void* b, std::size_t count) {
  auto* o = static_cast<std::uint16_t*>(out);
  forEachHalfBlock<Codec>(a, b, count, [&](float* x, const float* y, std::size_t begin, std::size_t n) {
    reduceLoop<float, Op>(x, x, y, n);
    Codec::narrow(x, o + begin, n);  // both inputs of this block were read: `out` may alias them
  });
}

template <typename Codec>
void sumAndDivideHalf(void* out, const void* a, const void* b, std::size_t count, int divisor) {
  auto* o = static_cast<std::uint16_t*>(out);
  forEachHalfBlock<Codec>(a, b, count, [&](float* x, const float* y, std::size_t begin, std::size_t n) {
    reduceLoop<float, SumOp>(x, x, y, n);
    Codec::narrow(x, o + begin, n);  // round the sum first, so the result equals reduce-then-divide
    Codec::widen(o + begin, x, n);
    divideLoop<float>(x, n, divisor);
    Codec::narrow(x, o + begin, n);
  });
}

template <typename Codec> void divideHalf(void* data, std::size_t count, int divisor) {
  auto* d = static_cast<std::uint16_t*>(data);
  forEachHalfBlock<Codec>(data, nullptr, count, [&](float* x, const float*, std::size_t begin, std::size_t n) {
    divideLoop<float>(x, n, divisor);
    Codec::narrow(x, d + begin, n);
  });
}

template <typename Codec> bool nonFiniteHalf(const void* data, std::size_t count) {
  bool found = false;
  forEachHalfBlock<Codec>(data, nullptr, count, [&](float* x, const float*, std::size_t, std::size_t n) {
    found |= nonFiniteLoop<float>(x, n);
  });
  return found;
}

// ---- dispatch ----------------------------------------------------------------------------------

struct Float16Tag {
  using Codec = Float16Codec;
};
struct BFloat16Tag {
  using Codec = Bfloat16Codec;
};
template <typename T> constexpr bool kIsHalf = std::is_same_v<T, Float16Tag> || std::is_same_v<T, BFloat16Tag>;

// Calls fn(T{}) with T the element type of `type` (a tag for the 16-bit floats).
template <typename Fn> decltype(auto) dispatchType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(std::int8_t{});
    case DataType::kUInt8: return fn(std::uint8_t{});
    case DataType::kInt32: return fn(std::int32_t{});
    case DataType::kUInt32: return fn(std::uint32_t{});
    case DataType::kInt64: return fn(std::int64_t{});
    case DataType::kUInt64: return fn(std::uint64_t{});
    case DataType::kFloat16: return fn(Float16Tag{});
    case DataType::kBFloat16: return fn(BFloat16Tag{});
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
  }
  throw InvalidArgument("unknown DataType " + std::to_string(static_cast<int>(type)));
}

template <typename T, typename Op> void reduceAs(void* out, const void* a, const void* b, std::size_t count) {
  if constexpr (kIsHalf<T>) {
    reduceHalf<typename T::Codec, Op>(out, a, b, count);
  } else {
    reduceLoop<T, Op>(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), count);
  }
}

}  // namespace

void reduceElements(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op) {
  dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return reduceAs<T, SumOp>(out, a, b, count);
      case ReduceOp::kProd: return reduceAs<T, ProdOp>(out, a, b, count);
      case ReduceOp::kMin: return reduceAs<T, MinOp>(out, a, b, count);
      case ReduceOp::kMax: return reduceAs<T, MaxOp>(out, a, b, count);
    }
    throw InvalidArgument("unknown ReduceOp " + std::to_string(static_cast<int>(op)));
  });
}

void sumAndDivideElements(void* out, const void* a, const void* b, std::size_t count, DataType type, int divisor) {
  dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsHalf<T>) {
      sumAndDivideHalf<typename T::Codec>(out, a, b, count, divisor);
    } else {
      sumAndDivideLoop<T>(static_cast<T*>(out), static_cast<const T*>(a), static_cast<const T*>(b), count, divisor);
    }
  });
}

void divideElements(void* data, std::size_t count, DataType type, int divisor) {
  dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsHalf<T>) {
      divideHalf<typename T::Codec>(data, count, divisor);
    } else {
      divideLoop<T>(static_cast<T*>(data), count, divisor);
    }
  });
}

bool containsNonFinite(const void* data, std::size_t count, DataType type) {
  if (!isFloatingPoint(type)) return false;
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (kIsHalf<T>) {
      return nonFiniteHalf<typename T::Codec>(data, count);
    } else if constexpr (std::is_floating_point_v<T>) {
      return nonFiniteLoop<T>(static_cast<const T*>(data), count);
    } else {
      return false;
    }
  });
}

}  // namespace ringsync::detail
