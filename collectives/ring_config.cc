#include "ring_config.h"

#include <algorithm>

#include "transfer_constants.h"

namespace ringsync::detail {

namespace {
std::size_t largestChunkBytes(int ranks, std::size_t count, std::size_t elementBytes) {
  const std::size_t n = static_cast<std::size_t>(ranks);
  return (count + n - 1) / n * elementBytes;
}
}  // namespace

bool sendsWholeChunks(bool wholeChunksBetweenTwoNodes, int ranks, std::size_t count, std::size_t elementBytes) {
  if (!wholeChunksBetweenTwoNodes || ranks < 2) return false;
  const std::size_t chunk = largestChunkBytes(ranks, count, elementBytes);
  return chunk >= kAcrossTwoRanksWholeChunkFromBytes && chunk <= kAcrossTwoRanksWholeChunkUpToBytes;
}

RingConfig ringConfigFor(const RingConfig& base, bool wholeChunksBetweenTwoNodes, int ranks, std::size_t count,
                         std::size_t elementBytes) {
  if (!sendsWholeChunks(wholeChunksBetweenTwoNodes, ranks, count, elementBytes)) return base;
  return {largestChunkBytes(ranks, count, elementBytes), 2};
}

std::size_t earlyReceiveBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes) {
  return wholeChunksBetweenTwoNodes ? std::max(base.segmentBytes, kAcrossTwoRanksWholeChunkUpToBytes)
                                    : base.segmentBytes;
}

std::size_t ringScratchBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes) {
  const std::size_t slots = static_cast<std::size_t>(base.depth) * base.segmentBytes;
  if (!wholeChunksBetweenTwoNodes) return slots;
  const std::size_t early = earlyReceiveBytes(base, true);
  return std::max(slots, 2 * kAcrossTwoRanksWholeChunkUpToBytes) + early;
}

}  // namespace ringsync::detail
