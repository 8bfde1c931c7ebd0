// Reduce-scatter and all-gather of small blocks across nodes as one all-reduce of the whole array
// by recursive doubling (recursive_doubling_allreduce.h): where latency decides, its log2 N
// exchanges across nodes (after one shared-memory round in each node) beat the one round's
// n-1 messages per rank, which carry every block to every peer, and the hierarchical version's
// fingerprint round plus its node and cross-node phases. Every rank moves the whole array, so it
// stops where bytes start to count (src/algorithm_selection.cc).
//
//   reduce-scatter  the input all-reduced in the communicator's piece scratch; recv = this rank's block
//   all-gather      this rank's block placed in a zeroed array, all-reduced as uint8 sums (x + 0 = x
//                   for every bit pattern); recv = the array
//
// The all-reduce carries this call's fingerprint in its messages, so a mismatch is raised on every
// rank as for any algorithm, and recv is written only after it completed.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void reduceScatterThroughAllreduce(AlgorithmContext& context, const Call& call);
void allgatherThroughAllreduce(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
