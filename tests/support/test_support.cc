#include "test_support.h"

#include <algorithm>

#include "closed_form.h"

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

void TypedBuffer::set(std::size_t i, double value) { closed_form::storeElement(bytes_.data(), i, type_, value); }

double TypedBuffer::get(std::size_t i) const { return closed_form::loadElement(bytes_.data(), i, type_); }

std::vector<std::size_t> interestingCounts(int n, DataType type, std::size_t segmentBytes) {
  const std::size_t segmentElements = std::max<std::size_t>(1, segmentBytes / dataTypeSize(type));
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<std::size_t> counts = {
      0, 1, un - 1, un, un + 1, 1021, un * (2 * segmentElements + segmentElements / 2) + 3, (std::size_t{1} << 20) + 7};
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

std::string describe(DataType type, ReduceOp op, std::size_t count, bool inPlace) {
  return std::string(dataTypeName(type)) + " " + reduceOpName(op) + " count=" + std::to_string(count) +
         (inPlace ? " in-place" : " out-of-place");
}

}  // namespace ringsync::test
