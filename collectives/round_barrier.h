// The barrier: one round with no payload. A rank leaves it only after hearing from every peer,
// and the fingerprints come along for free.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void roundBarrier(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
