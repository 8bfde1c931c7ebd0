#include "ring_config.h"

#include <algorithm>

#include "ringsync/options.h"

namespace ringsync::detail {

RingConfig ringConfigFor(const RingConfig& base, bool wholeChunksBetweenTwoNodes, int ranks, std::size_t count,
                         std::size_t elementBytes) {
  if (!wholeChunksBetweenTwoNodes || ranks < 2) return base;
  const std::size_t n = static_cast<std::size_t>(ranks);
  const std::size_t largestChunkBytes = (count + n - 1) / n * elementBytes;
  if (largestChunkBytes < Options::kAcrossTwoRanksWholeChunkFromBytes ||
      largestChunkBytes > Options::kAcrossTwoRanksWholeChunkUpToBytes)
    return base;
  return {largestChunkBytes, 2};
}

std::size_t earlyReceiveBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes) {
  return wholeChunksBetweenTwoNodes ? std::max(base.segmentBytes, Options::kAcrossTwoRanksWholeChunkUpToBytes)
                                : base.segmentBytes;
}

std::size_t ringScratchBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes) {
  const std::size_t slots = static_cast<std::size_t>(base.depth) * base.segmentBytes;
  if (!wholeChunksBetweenTwoNodes) return slots;
  const std::size_t early = earlyReceiveBytes(base, true);
  return std::max(slots, 2 * Options::kAcrossTwoRanksWholeChunkUpToBytes) + early;
}

}  // namespace ringsync::detail
