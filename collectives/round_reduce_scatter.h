// Reduce-scatter in one round (round_halves.h): every rank publishes its input but its own block,
// then reduces its own block from every rank's copy, peers in rank order. Latency one alpha;
// each rank reads (n-1) blocks and reduces them. Through shared memory on one node (no MPI message
// at all), by point-to-point messages across nodes while the blocks are small. The round carries
// the fingerprints, checked before any peer's data is read. Where it is chosen:
// src/algorithm_selection.cc.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// recv = block `rank` of op over every rank's send (MPI_Reduce_scatter_block); in place when recv
// is that block of send.
void roundReduceScatter(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
