#include "chunk_layout.h"

#include <algorithm>

namespace ringsync::detail {

ElementRange evenPart(std::size_t total, std::size_t parts, std::size_t index) {
  const std::size_t base = total / parts;
  const std::size_t extra = total % parts;
  return {index * base + std::min(index, extra), base + (index < extra ? 1 : 0)};
}

RingGeometry::RingGeometry(std::size_t count, int ranks, std::size_t elementBytes, std::size_t segmentBytes)
    : ChunkLayout(count, ranks) {
  const std::size_t largestChunk = (count + static_cast<std::size_t>(ranks) - 1) / static_cast<std::size_t>(ranks);
  const std::size_t segmentElements = std::max<std::size_t>(1, segmentBytes / elementBytes);
  segments_ = std::max<std::size_t>(1, (largestChunk + segmentElements - 1) / segmentElements);
}

ElementRange RingGeometry::segment(int c, std::size_t s) const {
  const ElementRange whole = chunk(c);
  const ElementRange part = evenPart(whole.count, segments_, s);
  return {whole.begin + part.begin, part.count};
}

}  // namespace ringsync::detail
