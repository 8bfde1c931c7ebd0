// Rabenseifner's all-reduce across nodes (butterfly.h: a reduce-scatter by recursive halving, an
// all-gather by recursive doubling, 2·log2 steps and the bandwidth-optimal bytes), for the
// mid-sized and large messages where the ring's 2(N-1) latencies dominate:
//
//   one rank per node, nodes of different sizes, or all on one node (forced, for tests): the
//     butterfly across all ranks
//   L >= 2 ranks on every node (node_hierarchy.h), as the hierarchical all-reduce does with its
//     ring: 1. inside each node, split's reduce-scatter through one shared-memory round (local
//     rank k ends with chunk k of the node's sum, round_halves.h); 2. across nodes, the ranks with
//     local rank k run the butterfly over chunk k, the L butterflies in parallel, each over S/L;
//     3. split's all-gather round inside the node. In pieces of what a node round carries.
//
// Checks without a round on the whole communicator (2(n-1) messages, 2-16 ms at 1,024 nodes):
// the node round carries every local rank's fingerprint and every butterfly message a summary of
// the calls behind its data (call_summary.h), in recursive doubling's format and partner order, so
// that the reduce-scatter ends with every rank holding every rank's call: a disagreement raises
// MismatchError (NonFiniteError) on every rank before the caller's buffer is written, whichever of
// the two algorithms the ranks took. A peer that took an algorithm with a whole-communicator round
// is met there (another_algorithm_watch.h), as recursive doubling does. kAvg sums and divides once
// by the rank count, on the chunk the owner finished. One Deadline, the call's, covers every wait.
// Where it is chosen: src/algorithm_selection.cc (the crossovers of bench/scale_model/README.md).
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Needs context.doublingBuffers and context.pieceScratch; contiguous buffers. Uses
// context.hierarchy when set, else all ranks of context.comm. send == recv: in place.
void rabenseifnerAllreduce(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
