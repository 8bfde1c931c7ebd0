// The all-reduce for ranks on several nodes with L >= 2 ranks on every node (node_hierarchy.h):
//
//   1. inside each node, split's reduce-scatter through shared memory: local rank k ends with
//      chunk k of the node's sum (split_allreduce.h, round 1 and the own-chunk reduction)
//   2. across nodes, local rank k of every node all-reduces chunk k with the ring over MPI
//      point-to-point; the L rings run in parallel, each over 1/L of the message
//   3. inside each node, split's all-gather (round 2)
//
// Only S/L bytes per rank cross the network, against the flat ring's 2(n-1)/n·S over the
// slowest (network) edge. kAvg sums in both levels and divides once by the total rank count, on
// the chunk the ring finished, so every rank holds the same bits.
//
// Checks: the node round carries the fingerprint and is checked first; the cross-node ring's
// first segment carries it again, so ranks on different nodes that disagree are caught there. A
// node whose own ranks disagree (or saw NaN/Inf) tells the other nodes through that cross-node
// fingerprint round before it raises, so every rank raises, none waits. One Deadline, the call's,
// covers every phase.
//
// Messages larger than a node round carries go in pieces, each through all three phases; only the
// first piece exchanges fingerprints.
#pragma once

#include "algorithms.h"

namespace ringsync::detail {

// Needs context.hierarchy; contiguous buffers (args.scattered unset). send == recv: in place.
void hierarchicalAllreduce(AlgorithmContext& context, const AllreduceArgs& args);

}  // namespace ringsync::detail
