#include "reduce_kernels.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "half.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

// Storage types for the two 16-bit float formats, so that templates can tell them apart.
struct Float16 { std::uint16_t bits; };
struct BFloat16 { std::uint16_t bits; };

template <typename T> struct Arithmetic { using Type = T; };            // what the op computes in
template <> struct Arithmetic<Float16> { using Type = float; };
template <> struct Arithmetic<BFloat16> { using Type = float; };

template <typename T> inline typename Arithmetic<T>::Type widen(T value) { return value; }
inline float widen(Float16 value) { return float16ToFloat(value.bits); }
inline float widen(BFloat16 value) { return bfloat16ToFloat(value.bits); }

template <typename T> inline T narrow(typename Arithmetic<T>::Type value) { return value; }
template <> inline Float16 narrow<Float16>(float value) { return Float16{floatToFloat16(value)}; }
template <> inline BFloat16 narrow<BFloat16>(float value) { return BFloat16{floatToBfloat16(value)}; }

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

struct SumOp { template <typename V> static V apply(V a, V b) { return wrappingAdd(a, b); } };
struct ProdOp { template <typename V> static V apply(V a, V b) { return wrappingMul(a, b); } };
struct MinOp { template <typename V> static V apply(V a, V b) { return b < a ? b : a; } };
struct MaxOp { template <typename V> static V apply(V a, V b) { return a < b ? b : a; } };

template <typename T, typename Op>
void reduceLoop(void* out, const void* a, const void* b, std::size_t count) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < count; ++i) o[i] = narrow<T>(Op::apply(widen(x[i]), widen(y[i])));
}

// Integers divide in (at least) int, truncating toward zero; floats divide exactly rounded.
template <typename V> inline V divideValue(V value, int divisor) { return static_cast<V>(value / divisor); }

template <typename T>
void sumAndDivideLoop(void* out, const void* a, const void* b, std::size_t count, int divisor) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (std::size_t i = 0; i < count; ++i) {
    // Round the sum to T first so the result equals reduce-then-divide bit for bit.
    const auto sum = widen(narrow<T>(SumOp::apply(widen(x[i]), widen(y[i]))));
    o[i] = narrow<T>(divideValue(sum, divisor));
  }
}

template <typename T> void divideLoop(void* data, std::size_t count, int divisor) {
  T* d = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) d[i] = narrow<T>(divideValue(widen(d[i]), divisor));
}

template <typename T> bool nonFiniteLoop(const void* data, std::size_t count) {
  const T* d = static_cast<const T*>(data);
  bool found = false;
  for (std::size_t i = 0; i < count; ++i) found |= !std::isfinite(widen(d[i]));
  return found;
}

// Calls fn.template operator()<T>() with T the storage type of `type`.
template <typename Fn> decltype(auto) dispatchType(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(std::int8_t{});
    case DataType::kUInt8: return fn(std::uint8_t{});
    case DataType::kInt32: return fn(std::int32_t{});
    case DataType::kUInt32: return fn(std::uint32_t{});
    case DataType::kInt64: return fn(std::int64_t{});
    case DataType::kUInt64: return fn(std::uint64_t{});
    case DataType::kFloat16: return fn(Float16{});
    case DataType::kBFloat16: return fn(BFloat16{});
    case DataType::kFloat32: return fn(float{});
    case DataType::kFloat64: return fn(double{});
  }
  throw InvalidArgument("unknown DataType " + std::to_string(static_cast<int>(type)));
}

}  // namespace

void reduceElements(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op) {
  dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAvg: return reduceLoop<T, SumOp>(out, a, b, count);
      case ReduceOp::kProd: return reduceLoop<T, ProdOp>(out, a, b, count);
      case ReduceOp::kMin: return reduceLoop<T, MinOp>(out, a, b, count);
      case ReduceOp::kMax: return reduceLoop<T, MaxOp>(out, a, b, count);
    }
    throw InvalidArgument("unknown ReduceOp " + std::to_string(static_cast<int>(op)));
  });
}

void sumAndDivideElements(void* out, const void* a, const void* b, std::size_t count, DataType type, int divisor) {
  dispatchType(type, [&](auto tag) { sumAndDivideLoop<decltype(tag)>(out, a, b, count, divisor); });
}

void divideElements(void* data, std::size_t count, DataType type, int divisor) {
  dispatchType(type, [&](auto tag) { divideLoop<decltype(tag)>(data, count, divisor); });
}

bool containsNonFinite(const void* data, std::size_t count, DataType type) {
  if (!isFloatingPoint(type)) return false;
  return dispatchType(type, [&](auto tag) { return nonFiniteLoop<decltype(tag)>(data, count); });
}

}  // namespace ringsync::detail
