#include "closed_form.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "collectives/half.h"

namespace ringsync::closed_form {
namespace {

template <typename T> void storeAs(void* data, std::size_t i, T value) {
  std::memcpy(static_cast<std::byte*>(data) + i * sizeof(T), &value, sizeof(T));
}
template <typename T> T loadAs(const void* data, std::size_t i) {
  T value;
  std::memcpy(&value, static_cast<const std::byte*>(data) + i * sizeof(T), sizeof(T));
  return value;
}

// Integers wrap modulo 2^bits instead of reaching the undefined out-of-range double -> integer cast.
template <typename T> T wrapInteger(double value) {
  const std::uint64_t bits = value >= 0x1p63 ? static_cast<std::uint64_t>(value)
                                             : static_cast<std::uint64_t>(static_cast<std::int64_t>(value));
  return static_cast<T>(bits);
}

bool isSigned(DataType type) {
  return type != DataType::kUInt8 && type != DataType::kUInt32 && type != DataType::kUInt64;
}

// What storing `value` in one element of `type` and reading it back gives.
double roundToType(DataType type, double value) {
  std::byte one[sizeof(double)];
  storeElement(one, 0, type, value);
  return loadElement(one, 0, type);
}

}  // namespace

double loadElement(const void* data, std::size_t i, DataType type) {
  switch (type) {
    case DataType::kInt8: return loadAs<std::int8_t>(data, i);
    case DataType::kUInt8: return loadAs<std::uint8_t>(data, i);
    case DataType::kInt32: return loadAs<std::int32_t>(data, i);
    case DataType::kUInt32: return loadAs<std::uint32_t>(data, i);
    case DataType::kInt64: return static_cast<double>(loadAs<std::int64_t>(data, i));
    case DataType::kUInt64: return static_cast<double>(loadAs<std::uint64_t>(data, i));
    case DataType::kFloat16: return detail::float16ToFloat(loadAs<std::uint16_t>(data, i));
    case DataType::kBFloat16: return detail::bfloat16ToFloat(loadAs<std::uint16_t>(data, i));
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
    case DataType::kFloat16: return storeAs(data, i, detail::floatToFloat16(static_cast<float>(value)));
    case DataType::kBFloat16: return storeAs(data, i, detail::floatToBfloat16(static_cast<float>(value)));
    case DataType::kFloat32: return storeAs(data, i, static_cast<float>(value));
    case DataType::kFloat64: return storeAs(data, i, value);
  }
}

double allreduceInput(ReduceOp op, DataType type, int rank, int ranks, std::size_t i) {
  const std::size_t r = static_cast<std::size_t>(rank);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return static_cast<double>(r + i % 7) - (isSigned(type) ? 3 : 0);
    case ReduceOp::kProd: return static_cast<double>(1 + (r + i) % 2);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<double>((r + i) % static_cast<std::size_t>(ranks) + i % 5) - (isSigned(type) ? 5 : 0);
  }
  return NAN;
}

// Each value is rounded as `type` stores it, the sum before the average is taken: an integer sum
// that wraps is divided as the library divides it.
double allreduceExpected(ReduceOp op, DataType type, int n, std::size_t i) {
  const double shift = isSigned(type) ? 3 : 0;
  const double sum = roundToType(type, n * static_cast<double>(i % 7) + n * (n - 1) / 2.0 - shift * n);
  switch (op) {
    case ReduceOp::kSum: return sum;
    case ReduceOp::kAvg:  // floats: a multiple of 1/n with a small numerator, exact
      return roundToType(type, isFloatingPoint(type) ? sum / n : std::trunc(sum / n));
    case ReduceOp::kProd: return roundToType(type, std::ldexp(1.0, i % 2 == 0 ? n / 2 : (n + 1) / 2));
    case ReduceOp::kMin: return roundToType(type, static_cast<double>(i % 5) - (isSigned(type) ? 5 : 0));
    case ReduceOp::kMax: return roundToType(type, static_cast<double>(i % 5) + (n - 1) - (isSigned(type) ? 5 : 0));
  }
  return NAN;
}

std::size_t allreducePeriod(int ranks) { return 70 * static_cast<std::size_t>(ranks); }

double rankValue(int rank, std::size_t i) {
  return static_cast<double>(1 + (static_cast<std::size_t>(rank) * 13 + i) % kRankValuePeriod);
}

}  // namespace ringsync::closed_form
