// Helpers shared by the multi-rank tests: world rank/size, collective verdicts, typed buffers
// and the counts to test. The inputs and their exact results are closed_form.h's (shared with the
// bench).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "ringsync/types.h"

namespace ringsync::test {

int worldRank();
int worldSize();

// True on every rank iff `ok` is true on every rank: use it before a REQUIRE so that all ranks
// fail together instead of one leaving its peers waiting in a collective.
bool allRanks(bool ok, MPI_Comm comm = MPI_COMM_WORLD);
long long sumOverRanks(long long value, MPI_Comm comm = MPI_COMM_WORLD);

// True when `bytes` bytes at `data` are identical on every rank of `comm`.
bool identicalOnAllRanks(const void* data, std::size_t bytes, MPI_Comm comm = MPI_COMM_WORLD);

// A host buffer of `count` elements of `type`, read and written as doubles
// (closed_form::storeElement / loadElement).
class TypedBuffer {
 public:
  TypedBuffer(DataType type, std::size_t count);
  void set(std::size_t i, double value);
  double get(std::size_t i) const;
  void fill(std::uint8_t byte);  // a sentinel pattern
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  std::size_t count() const { return count_; }
  std::size_t bytes() const { return bytes_.size(); }
  DataType type() const { return type_; }
  const std::vector<std::uint8_t>& raw() const { return bytes_; }

 private:
  DataType type_;
  std::size_t count_;
  std::vector<std::uint8_t> bytes_;
};

// The counts every collective is tested with: 0, 1, n-1, n, n+1, 1021, more than two segments per
// chunk at `segmentBytes`, and 2^20 + 7 (deduplicated, ascending).
std::vector<std::size_t> interestingCounts(int ranks, DataType type, std::size_t segmentBytes);

std::string describe(DataType type, ReduceOp op, std::size_t count, bool inPlace);

}  // namespace ringsync::test
