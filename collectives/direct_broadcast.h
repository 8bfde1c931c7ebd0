// The small-message broadcast: the root attaches its buffer to the call's one round (which also
// carries the fingerprints); every other rank copies it out. Latency one alpha; through shared
// memory the peers read the root's slot in place.
#pragma once

#include "algorithms.h"

namespace ringsync::detail {

void directBroadcast(AlgorithmContext& context, const BroadcastArgs& args);

}  // namespace ringsync::detail
