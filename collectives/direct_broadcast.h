// The small-message broadcast: the root attaches its buffer to the call's one round (which also
// carries the fingerprints); every other rank copies it out. Latency one alpha; through shared
// memory the peers read the root's slot in place.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void directBroadcast(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
