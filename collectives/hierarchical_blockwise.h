// The hierarchical reduce-scatter and all-gather, for ranks on several nodes with the same number
// (L >= 2) of ranks on each: only 1/L of each rank's bytes crosses the network, as in the
// hierarchical all-reduce (hierarchical_allreduce.h).
//
//   reduce-scatter  1. in the node, one shared-memory round: local rank m receives every local
//                      peer's copy of the blocks its group holds (block_groups.h: the blocks of
//                      the ranks with local rank m, one per node) and sums them;
//                   2. across nodes, the ranks with local rank m reduce-scatter those node sums
//                      (the ring over the cross-node communicator): each ends with its own block.
//   all-gather      the reverse: across nodes each local rank m gathers its group's blocks, then
//                   one shared-memory round hands every local rank every group.
//
// Per rank and node, (N-1)/N of the node's share of the array crosses the network instead of the
// flat ring's (n-1)/n of it per rank, so busbw = algbw·(n-1)/n can exceed the link rate (1.5x at
// 2 nodes x 2 ranks). The blocks are cut into pieces: the cross-node ring of one piece runs while
// the node's round of the next (reduce-scatter) or previous (all-gather) piece goes through shared
// memory, so the network stays busy. The call is checked first by one fingerprint round on the
// whole communicator, as every algorithm's first round is. kAvg sums at both levels and divides
// once at the end.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void hierarchicalReduceScatter(AlgorithmContext& context, const Call& call);
void hierarchicalAllgather(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
