#include "scattered_buffer.h"

#include <algorithm>
#include <cstring>

namespace ringsync::detail {

ScatteredBuffer::ScatteredBuffer(const std::vector<Span>& spans, std::size_t elementBytes)
    : elementBytes_(elementBytes) {
  for (const Span& span : spans) {
    if (span.count == 0) continue;
    spans_.push_back(span);
    starts_.push_back(count_);
    count_ += span.count;
  }
  // Two ranges can cut one span in two, so at most one piece more than there are spans.
  pieces_.reserve(spans_.size() + 1);
}

std::size_t ScatteredBuffer::spanHolding(std::size_t index) const {
  // The last span starting at or before `index`.
  const auto after = std::upper_bound(starts_.begin(), starts_.end(), index);
  return after == starts_.begin() ? 0 : static_cast<std::size_t>(after - starts_.begin()) - 1;
}

const std::vector<PayloadPiece>& ScatteredBuffer::pieces(std::size_t begin1, std::size_t length1, std::size_t begin2,
                                                         std::size_t length2) const {
  pieces_.clear();
  auto add = [this](std::byte* data, std::size_t, std::size_t length) {
    pieces_.push_back({data, length * elementBytes_});
  };
  forEach(begin1, length1, add);
  forEach(begin2, length2, add);
  return pieces_;
}

void ScatteredBuffer::gather(void* packed) const {
  auto* out = static_cast<std::byte*>(packed);
  forEach(0, count_, [&](const std::byte* data, std::size_t index, std::size_t length) {
    std::memcpy(out + index * elementBytes_, data, length * elementBytes_);
  });
}

void ScatteredBuffer::scatter(const void* packed) const {
  const auto* in = static_cast<const std::byte*>(packed);
  forEach(0, count_, [&](std::byte* data, std::size_t index, std::size_t length) {
    std::memcpy(data, in + index * elementBytes_, length * elementBytes_);
  });
}

}  // namespace ringsync::detail
