// Reduce-scatter in rounds (the exchange of the split all-reduce's first round, round_halves.h,
// over equal blocks and in slices): every rank publishes its input but its own block, then reduces
// its own block from every rank's copy, peers in rank order. One round while n-1 blocks fit a round
// (latency one alpha), else the blocks in slices, one round each (the rounds' two slot sets let a
// rank publish the next slice while its peers still read the last). Through shared memory on one
// node (no MPI message at all), by point-to-point messages across nodes while the blocks are small.
// The first round carries the fingerprints, checked before any peer's data is read. Where it is
// chosen: src/algorithm_selection.cc.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// recv = block `rank` of op over every rank's send (MPI_Reduce_scatter_block); in place when recv
// is that block of send.
void roundReduceScatter(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
