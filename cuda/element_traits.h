// Device-side element arithmetic shared by the kernels (include from .cu files only): storage vs
// compute types, the reduction operators, and the 16-byte vector split. The arithmetic mirrors
// collectives/reduce_kernels.cc exactly (same widening, same comparisons, wrap-around integers),
// so a device reduction and a host reduction of the same inputs agree bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ringsync/errors.h"
#include "ringsync/types.h"

namespace ringsync::cuda::kernels {

// Tags for the two 16-bit float formats (stored as raw 16-bit words so vectors stay trivial).
struct Float16 {};
struct BFloat16 {};

// Storage: what sits in memory. Compute: what an operation runs in (float32 for half types).
template <typename T> struct Element {
  using Storage = T;
  using Compute = T;
  static __device__ __forceinline__ Compute widen(Storage s) { return s; }
  static __device__ __forceinline__ Storage narrow(Compute c) { return c; }
};
template <> struct Element<Float16> {
  using Storage = unsigned short;
  using Compute = float;
  static __device__ __forceinline__ float widen(Storage s) { return __half2float(__ushort_as_half(s)); }
  static __device__ __forceinline__ Storage narrow(float c) { return __half_as_ushort(__float2half_rn(c)); }
};
template <> struct Element<BFloat16> {
  using Storage = unsigned short;
  using Compute = float;
  static __device__ __forceinline__ float widen(Storage s) { return __bfloat162float(__ushort_as_bfloat16(s)); }
  static __device__ __forceinline__ Storage narrow(float c) { return __bfloat16_as_ushort(__float2bfloat16_rn(c)); }
};

template <typename T> struct Unsigned { using Type = T; };
template <> struct Unsigned<std::int8_t> { using Type = std::uint8_t; };
template <> struct Unsigned<std::int32_t> { using Type = std::uint32_t; };
template <> struct Unsigned<std::int64_t> { using Type = std::uint64_t; };

// Signed overflow is undefined: integer sums and products wrap by computing unsigned, at least
// as wide as unsigned int (so uint8 products cannot overflow int through promotion).
template <typename V> __device__ __forceinline__ V wrappingAdd(V a, V b) {
  using U = typename Unsigned<V>::Type;
  return static_cast<V>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <> __device__ __forceinline__ float wrappingAdd(float a, float b) { return a + b; }
template <> __device__ __forceinline__ double wrappingAdd(double a, double b) { return a + b; }
template <typename V> __device__ __forceinline__ V wrappingMul(V a, V b) {
  using U0 = typename Unsigned<V>::Type;
  using U = typename std::conditional<(sizeof(U0) < sizeof(unsigned)), unsigned, U0>::type;
  return static_cast<V>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <> __device__ __forceinline__ float wrappingMul(float a, float b) { return a * b; }
template <> __device__ __forceinline__ double wrappingMul(double a, double b) { return a * b; }

struct SumOp {
  template <typename V> __device__ __forceinline__ static V apply(V a, V b) { return wrappingAdd(a, b); }
};
struct ProdOp {
  template <typename V> __device__ __forceinline__ static V apply(V a, V b) { return wrappingMul(a, b); }
};
struct MinOp {
  template <typename V> __device__ __forceinline__ static V apply(V a, V b) { return b < a ? b : a; }
};
struct MaxOp {
  template <typename V> __device__ __forceinline__ static V apply(V a, V b) { return a < b ? b : a; }
};

// One 16-byte vector of storage elements: loads and stores of it compile to 128-bit accesses.
template <typename S> struct alignas(16) Vec16 {
  static constexpr int kLanes = static_cast<int>(16 / sizeof(S));
  S lane[kLanes];
};

// How a range of `count` elements splits into a scalar head (until every pointer is 16-byte
// aligned), whole vectors, and a scalar tail. Pointers that disagree modulo 16 cannot all be
// aligned at once: then everything is scalar.
struct VectorSplit {
  std::size_t head = 0;
  std::size_t vectors = 0;
  std::size_t count = 0;
  __host__ __device__ std::size_t tailStart(std::size_t lanes) const { return head + vectors * lanes; }
  __host__ __device__ std::size_t scalars(std::size_t lanes) const { return head + (count - tailStart(lanes)); }
  // The i-th scalar element's index in the range.
  __host__ __device__ std::size_t scalarIndex(std::size_t s, std::size_t lanes) const {
    return s < head ? s : tailStart(lanes) + (s - head);
  }
};

__host__ __device__ inline VectorSplit splitForVectors(std::size_t count, std::size_t elementBytes, std::uintptr_t p0,
                                                       std::uintptr_t p1, std::uintptr_t p2) {
  VectorSplit split;
  split.count = count;
  const std::uintptr_t misalign = p0 % 16;
  if (p1 % 16 != misalign || p2 % 16 != misalign || misalign % elementBytes != 0) {
    split.head = count;  // all scalar
    return split;
  }
  const std::size_t lanes = 16 / elementBytes;
  const std::size_t head = ((16 - misalign) % 16) / elementBytes;
  split.head = head < count ? head : count;
  split.vectors = (count - split.head) / lanes;
  return split;
}

}  // namespace ringsync::cuda::kernels
