// The bench's -c check: a buffer is filled with one period of closed-form values (closed_form.h),
// encoded once and tiled, and checked by comparing bytes against the same tiling, so that neither
// costs a conversion per element at the largest sizes.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "ringsync/types.h"

namespace ringsync::bench {

class PeriodicPattern {
 public:
  // `valueAt(i)` for i in [0, period), stored as `type`.
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
