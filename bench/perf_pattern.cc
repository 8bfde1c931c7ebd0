#include "perf_pattern.h"

#include <algorithm>
#include <cstring>

#include "closed_form.h"

namespace ringsync::bench {

PeriodicPattern::PeriodicPattern(DataType type, std::size_t period, const std::function<double(std::size_t)>& valueAt)
    : elementBytes_(dataTypeSize(type)), period_(period), bytes_(period * elementBytes_) {
  for (std::size_t i = 0; i < period; ++i) closed_form::storeElement(bytes_.data(), i, type, valueAt(i));
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
