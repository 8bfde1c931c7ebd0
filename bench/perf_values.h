// Element values for the bench's -c check: reading and writing one element of any DataType as a
// double, and the closed-form inputs and results (small integers, exact in every type) that let
// every rank verify its output without a reference copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "ringsync/types.h"

namespace ringsync::bench {

// float16 / bfloat16 <-> float32, round-to-nearest-even (also what the MPI half ops compute in).
float halfToFloat(std::uint16_t bits);
std::uint16_t floatToHalf(float value);
float bfloat16ToFloat(std::uint16_t bits);
std::uint16_t floatToBfloat16(float value);

// Element `i` of a host buffer of `type`, as a double, and the reverse (integers wrap like a cast
// through int64).
double loadElement(const void* data, std::size_t i, DataType type);
void storeElement(void* data, std::size_t i, DataType type, double value);

// What storing `value` in one element of `type` and reading it back gives.
double roundToType(DataType type, double value);

// All-reduce: rank r's input element i, and the exact result over n ranks:
//   sum/avg: x = r + i%7           -> n(i%7) + n(n-1)/2 (avg: / n, integers truncate)
//   prod:    x = 1 + (r+i)%2       -> 2^(number of r with r+i odd)
//   min/max: x = (r+i)%n + i%5     -> i%5 / i%5 + n-1
double allreduceInput(ReduceOp op, int rank, int ranks, std::size_t i);
double allreduceExpected(ReduceOp op, DataType type, int ranks, std::size_t i);

// Broadcast: the root's element i (non-roots start from a sentinel that differs from it).
double broadcastValue(std::size_t i);

// The closed forms above repeat with a short period, so a buffer is filled and checked by tiling
// one period of encoded elements: `valueAt(i)` for i in [0, period), stored as `type`.
class PeriodicPattern {
 public:
  PeriodicPattern(DataType type, std::size_t period, const std::function<double(std::size_t)>& valueAt);
  void fill(void* data, std::size_t count) const;
  // Elements of `data` whose bytes differ from the pattern (bit-exact comparison).
  std::size_t countMismatches(const void* data, std::size_t count) const;

 private:
  std::size_t elementBytes_;
  std::size_t period_;
  std::vector<std::byte> bytes_;  // one period, encoded
};

}  // namespace ringsync::bench
