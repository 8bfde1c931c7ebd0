#include "ring_geometry.h"

#include <algorithm>

namespace ringsync::detail {
namespace {
// The first `total % parts` parts get one element more.
ElementRange evenPart(std::size_t total, std::size_t parts, std::size_t index) {
  const std::size_t base = total / parts;
  const std::size_t extra = total % parts;
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}
}  // namespace

RingGeometry::RingGeometry(std::size_t count, int ranks, std::size_t elementBytes, std::size_t segmentBytes)
    : count_(count), ranks_(ranks) {
  const std::size_t largestChunk = (count + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks);
  const std::size_t segmentElements = std::max<std::size_t>(1, segmentBytes / elementBytes);
  segments_ = std::max<std::size_t>(1, (largestChunk + segmentElements - 1) / segmentElements);
}

ElementRange RingGeometry::chunk(int c) const {
  return evenPart(count_, static_cast<std::size_t>(ranks_), static_cast<std::size_t>(c));
}

ElementRange RingGeometry::segment(int c, std::size_t s) const {
  const ElementRange whole = chunk(c);
  const ElementRange part = evenPart(whole.count, segments_, s);
  return {whole.begin + part.begin, part.count};
}

}  // namespace ringsync::detail
