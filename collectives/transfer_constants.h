// The sizes at which an algorithm changes how it sends a message across nodes. Internal: measured
// on this project's machines, not part of the contract. Each says why in one line and where it was
// measured; the full measurements that were kept next to them before are in bench/RESULTS.md
// section 17. (The sizes at which one algorithm gives way to another: src/selection_constants.h.)
#pragma once

#include <cstddef>

namespace ringsync::detail {

// The ring between two single-rank nodes sends a chunk (half the message) of this many bytes as one
// message, two in flight, instead of eager-sized segments: from 192 KiB Open MPI's TCP path writes
// it straight into the receive buffer, and above 400 KiB a rate cap queues the rendezvous go-ahead
// (RESULTS section 13, "Where the two cores go"; ring_config.cc).
inline constexpr std::size_t kAcrossTwoRanksWholeChunkFromBytes = 192 * 1024;
inline constexpr std::size_t kAcrossTwoRanksWholeChunkUpToBytes = 400 * 1024;

// Recursive doubling across nodes of L ranks each: while L x the message's bytes stay below this,
// the node's leader alone sends the whole message across (node_leader.h); from it each local rank
// sends its 1/L chunk (RESULTS section 13, "Which local ranks send what", where every local rank
// sent the whole message below it; section 16.19: the leader alone, 1.5-2.1x faster at 8 B-8 KiB).
inline constexpr std::size_t kAcrossNodesShardFromBytes = 32 * 1024;

}  // namespace ringsync::detail
