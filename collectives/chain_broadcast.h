// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, in segments. Every non-root rank
// forwards segment k while segment k+1 is arriving, so T ~ S·beta + (n-2)·segment·beta + (n-1)·alpha:
// for large S every link carries S once, the bandwidth limit of a broadcast.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void chainBroadcast(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
