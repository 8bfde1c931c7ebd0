// The pipelining settings of the segmented algorithms (the ring all-reduce, the chain broadcast),
// and how one ring call picks its own.
#pragma once

#include <cstddef>

namespace ringsync::detail {

struct RingConfig {
  std::size_t segmentBytes;  // pipelining unit (a ring call may send whole chunks instead: ringConfigFor)
  int depth;                 // segments in flight per direction (>= 2)
};

// Whether a ring call of `count` elements over `ranks` sends each chunk as one message: with
// wholeChunksBetweenTwoNodes (a communicator of two ranks on two nodes), a chunk of
// kAcrossTwoRanksWholeChunkFromBytes..UpToBytes (transfer_constants.h says why and where it was
// measured). The same on every rank of a matching call.
bool sendsWholeChunks(bool wholeChunksBetweenTwoNodes, int ranks, std::size_t count, std::size_t elementBytes);

// The pipelining of that call: `base`, or one message per chunk, two in flight.
RingConfig ringConfigFor(const RingConfig& base, bool wholeChunksBetweenTwoNodes, int ranks, std::size_t count,
                         std::size_t elementBytes);

// What the ring's first receive, posted before the calls' fingerprints are compared, must hold:
// the left neighbour may be in another call, whose first segment may be longer than this one's.
std::size_t earlyReceiveBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes);

// The ring scratch any call may need (its slots and the first receive's own slot), reserved when the
// communicator is built so that no call grows it.
std::size_t ringScratchBytes(const RingConfig& base, bool wholeChunksBetweenTwoNodes);

}  // namespace ringsync::detail
