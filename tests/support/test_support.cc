#include "test_support.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "collectives/half.h"

namespace ringsync::test {

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int worldSize() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

bool allRanks(bool ok, MPI_Comm comm) {
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, comm);
  return all != 0;
}

long long sumOverRanks(long long value, MPI_Comm comm) {
  long long total = 0;
  MPI_Allreduce(&value, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return total;
}

bool identicalOnAllRanks(const void* data, std::size_t bytes, MPI_Comm comm) {
  // FNV-1a of the bytes, then compare min and max over the ranks.
  std::uint64_t hash = 1469598103934665603ull;
  const auto* p = static_cast<const std::uint8_t*>(data);
  for (std::size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 1099511628211ull;
  std::uint64_t low = 0, high = 0;
  MPI_Allreduce(&hash, &low, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&hash, &high, 1, MPI_UINT64_T, MPI_MAX, comm);
  return low == high;
}

TypedBuffer::TypedBuffer(DataType type, std::size_t count)
    : type_(type), count_(count), bytes_(count * dataTypeSize(type)) {}

void TypedBuffer::fill(std::uint8_t byte) { std::fill(bytes_.begin(), bytes_.end(), byte); }

namespace {
template <typename T> void store(std::vector<std::uint8_t>& bytes, std::size_t i, T value) {
  std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}
template <typename T> T load(const std::vector<std::uint8_t>& bytes, std::size_t i) {
  T value;
  std::memcpy(&value, bytes.data() + i * sizeof(T), sizeof(T));
  return value;
}
}  // namespace

void TypedBuffer::set(std::size_t i, double v) {
  switch (type_) {
    case DataType::kInt8: return store(bytes_, i, static_cast<std::int8_t>(v));
    case DataType::kUInt8: return store(bytes_, i, static_cast<std::uint8_t>(v));
    case DataType::kInt32: return store(bytes_, i, static_cast<std::int32_t>(v));
    case DataType::kUInt32: return store(bytes_, i, static_cast<std::uint32_t>(v));
    case DataType::kInt64: return store(bytes_, i, static_cast<std::int64_t>(v));
    case DataType::kUInt64: return store(bytes_, i, static_cast<std::uint64_t>(v));
    case DataType::kFloat16: return store(bytes_, i, detail::floatToFloat16(static_cast<float>(v)));
    case DataType::kBFloat16: return store(bytes_, i, detail::floatToBfloat16(static_cast<float>(v)));
    case DataType::kFloat32: return store(bytes_, i, static_cast<float>(v));
    case DataType::kFloat64: return store(bytes_, i, v);
  }
}

double TypedBuffer::get(std::size_t i) const {
  switch (type_) {
    case DataType::kInt8: return load<std::int8_t>(bytes_, i);
    case DataType::kUInt8: return load<std::uint8_t>(bytes_, i);
    case DataType::kInt32: return load<std::int32_t>(bytes_, i);
    case DataType::kUInt32: return load<std::uint32_t>(bytes_, i);
    case DataType::kInt64: return static_cast<double>(load<std::int64_t>(bytes_, i));
    case DataType::kUInt64: return static_cast<double>(load<std::uint64_t>(bytes_, i));
    case DataType::kFloat16: return detail::float16ToFloat(load<std::uint16_t>(bytes_, i));
    case DataType::kBFloat16: return detail::bfloat16ToFloat(load<std::uint16_t>(bytes_, i));
    case DataType::kFloat32: return load<float>(bytes_, i);
    case DataType::kFloat64: return load<double>(bytes_, i);
  }
  return NAN;
}

bool isSigned(DataType type) {
  return type != DataType::kUInt8 && type != DataType::kUInt32 && type != DataType::kUInt64;
}

double inputValue(ReduceOp op, DataType type, int rank, std::size_t i) {
  const double r = rank;
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg: return r + static_cast<double>(i % 7) - (isSigned(type) ? 3 : 0);
    case ReduceOp::kProd: return 1 + static_cast<double>((static_cast<std::size_t>(rank) + i) % 2);
    case ReduceOp::kMin:
    case ReduceOp::kMax: {
      const int n = worldSize();
      return static_cast<double>((static_cast<std::size_t>(rank) + i) % static_cast<std::size_t>(n) + i % 5) -
             (isSigned(type) ? 5 : 0);
    }
  }
  return NAN;
}

double expectedValue(ReduceOp op, DataType type, int n, std::size_t i) {
  const double offset = isSigned(type) ? 3 : 0;
  const double sum = n * static_cast<double>(i % 7) + n * (n - 1) / 2.0 - offset * n;
  switch (op) {
    case ReduceOp::kSum: return sum;
    case ReduceOp::kAvg:
      if (isFloatingPoint(type)) return sum / n;  // exact: a multiple of 1/n with a tiny numerator
      return std::trunc(sum / n);                 // integers truncate toward zero
    case ReduceOp::kProd: {
      const int odd = (i % 2 == 0) ? n / 2 : (n + 1) / 2;  // ranks r with r + i odd
      return std::ldexp(1.0, odd);
    }
    case ReduceOp::kMin: return static_cast<double>(i % 5) - (isSigned(type) ? 5 : 0);
    case ReduceOp::kMax: return static_cast<double>(i % 5) + (n - 1) - (isSigned(type) ? 5 : 0);
  }
  return NAN;
}

double roundToType(DataType type, double value) {
  TypedBuffer one(type, 1);
  one.set(0, value);
  return one.get(0);
}

std::vector<std::size_t> interestingCounts(int n, DataType type, std::size_t segmentBytes) {
  const std::size_t segmentElements = std::max<std::size_t>(1, segmentBytes / dataTypeSize(type));
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<std::size_t> counts = {0, 1, un - 1, un, un + 1, 1021, un * (2 * segmentElements + segmentElements / 2) + 3,
                                     (std::size_t{1} << 20) + 7};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::string describe(DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  return std::string(dataTypeName(type)) + " " + reduceOpName(op) + " count=" + std::to_string(count) +
         (inPlace ? " in-place" : " out-of-place");
}

}  // namespace ringsync::test
