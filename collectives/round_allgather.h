// All-gather in one round (round_halves.h): every rank publishes its block and copies every
// peer's into place. Latency one alpha. Through shared memory on one node, by point-to-point
// messages across nodes while the blocks are small. The round carries the fingerprints, checked
// before any peer's data is read or recv is written.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// recv = every rank's send, in rank order; in place when send is this rank's block of recv.
void roundAllgather(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
