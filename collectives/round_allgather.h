// All-gather in rounds (the exchange of the split all-reduce's second round, over equal blocks and
// in slices): every rank publishes its block and copies every peer's into place; one round while a
// block fits one (latency one alpha), else the blocks in slices, one round each. Through shared
// memory on one node, by point-to-point messages across nodes while the blocks are small. The first
// round carries the fingerprints, checked before any peer's data is read or recv is written.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// recv = every rank's send, in rank order; in place when send is this rank's block of recv.
void roundAllgather(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
