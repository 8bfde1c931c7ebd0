#include "perf_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#ifndef __FLT16_MANT_DIG__
#error "the bench converts float16 with the compiler's _Float16 (GCC >= 12, Clang >= 15)"
#endif

namespace ringsync::bench {
namespace {

template <typename T> void storeAs(void* data, std::size_t i, T value) {
  std::memcpy(static_cast<std::byte*>(data) + i * sizeof(T), &value, sizeof(T));
}
template <typename T> T loadAs(const void* data, std::size_t i) {
  T value;
  std::memcpy(&value, static_cast<const std::byte*>(data) + i * sizeof(T), sizeof(T));
  return value;
}
// Integers wrap (as the library's sums do) instead of hitting the undefined double->int cast.
template <typename T> T wrapInteger(double value) {
  return static_cast<T>(static_cast<std::uint64_t>(static_cast<std::int64_t>(value)));
}

}  // namespace

float halfToFloat(std::uint16_t bits) {
  _Float16 value;
  std::memcpy(&value, &bits, sizeof bits);
  return static_cast<float>(value);
}

std::uint16_t floatToHalf(float value) {
  const _Float16 half = static_cast<_Float16>(value);  // the compiler rounds to nearest even
  std::uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}

float bfloat16ToFloat(std::uint16_t bits) {
  const std::uint32_t wide = std::uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

std::uint16_t floatToBfloat16(float value) {
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((bits >> 16) | 0x40u);  // NaN
  return static_cast<std::uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);               // nearest even
}

double loadElement(const void* data, std::size_t i, DataType type) {
  switch (type) {
    case DataType::kInt8: return loadAs<std::int8_t>(data, i);
    case DataType::kUInt8: return loadAs<std::uint8_t>(data, i);
    case DataType::kInt32: return loadAs<std::int32_t>(data, i);
    case DataType::kUInt32: return loadAs<std::uint32_t>(data, i);
    case DataType::kInt64: return static_cast<double>(loadAs<std::int64_t>(data, i));
    case DataType::kUInt64: return static_cast<double>(loadAs<std::uint64_t>(data, i));
    case DataType::kFloat16: return halfToFloat(loadAs<std::uint16_t>(data, i));
    case DataType::kBFloat16: return bfloat16ToFloat(loadAs<std::uint16_t>(data, i));
    case DataType::kFloat32: return loadAs<float>(data, i);
    case DataType::kFloat64: return loadAs<double>(data, i);
  }
  return NAN;
}

void storeElement(void* data, std::size_t i, DataType type, double value) {
  switch (type) {
    case DataType::kInt8: return storeAs(data, i, wrapInteger<std::int8_t>(value));
    case DataType::kUInt8: return storeAs(data, i, wrapInteger<std::uint8_t>(value));
    case DataType::kInt32: return storeAs(data, i, wrapInteger<std::int32_t>(value));
    case DataType::kUInt32: return storeAs(data, i, wrapInteger<std::uint32_t>(value));
    case DataType::kInt64: return storeAs(data, i, wrapInteger<std::int64_t>(value));
    case DataType::kUInt64: return storeAs(data, i, wrapInteger<std::uint64_t>(value));
    case DataType::kFloat16: return storeAs(data, i, floatToHalf(static_cast<float>(value)));
    case DataType::kBFloat16: return storeAs(data, i, floatToBfloat16(static_cast<float>(value)));
    case DataType::kFloat32: return storeAs(data, i, static_cast<float>(value));
    case DataType::kFloat64: return storeAs(data, i, value);
  }
}

double roundToType(DataType type, double value) {
  std::byte one[8];
  storeElement(one, 0, type, value);
  return loadElement(one, 0, type);
}

double allreduceInput(ReduceOp op, int rank, int ranks, std::size_t i) {
  const std::size_t r = static_cast<std::size_t>(rank);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<double>(r + i % 7);
    case ReduceOp::kProd: return static_cast<double>(1 + (r + i) % 2);
    case ReduceOp::kMin:
    case ReduceOp::kMax: return static_cast<double>((r + i) % static_cast<std::size_t>(ranks) + i % 5);
  }
  return NAN;
}

double allreduceExpected(ReduceOp op, DataType type, int n, std::size_t i) {
  const double sum = roundToType(type, n * static_cast<double>(i % 7) + n * (n - 1) / 2.0);
  switch (op) {
    case ReduceOp::kSum: return sum;
    case ReduceOp::kAvg: return roundToType(type, isFloatingPoint(type) ? sum / n : std::trunc(sum / n));
    case ReduceOp::kProd: return roundToType(type, std::ldexp(1.0, i % 2 == 0 ? n / 2 : (n + 1) / 2));
    case ReduceOp::kMin: return roundToType(type, static_cast<double>(i % 5));
    case ReduceOp::kMax: return roundToType(type, static_cast<double>(i % 5 + static_cast<std::size_t>(n) - 1));
  }
  return NAN;
}

double broadcastValue(std::size_t i) { return static_cast<double>(1 + i % 97); }

PeriodicPattern::PeriodicPattern(DataType type, std::size_t period, const std::function<double(std::size_t)>& valueAt)
    : elementBytes_(dataTypeSize(type)), period_(period), bytes_(period * elementBytes_) {
  for (std::size_t i = 0; i < period; ++i) storeElement(bytes_.data(), i, type, valueAt(i));
}

void PeriodicPattern::fill(void* data, std::size_t count) const {
  auto* out = static_cast<std::byte*>(data);
  for (std::size_t begin = 0; begin < count; begin += period_) {
    const std::size_t n = std::min(period_, count - begin);
    std::memcpy(out + begin * elementBytes_, bytes_.data(), n * elementBytes_);
  }
}

std::size_t PeriodicPattern::countMismatches(const void* data, std::size_t count) const {
  const auto* in = static_cast<const std::byte*>(data);
  std::size_t wrong = 0;
  for (std::size_t begin = 0; begin < count; begin += period_) {
    const std::size_t n = std::min(period_, count - begin);
    const std::byte* block = in + begin * elementBytes_;
    if (std::memcmp(block, bytes_.data(), n * elementBytes_) == 0) continue;
    for (std::size_t i = 0; i < n; ++i)
      wrong += std::memcmp(block + i * elementBytes_, bytes_.data() + i * elementBytes_, elementBytes_) != 0;
  }
  return wrong;
}

}  // namespace ringsync::bench
