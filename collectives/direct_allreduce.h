// The small-message all-reduce: every rank sends its whole buffer to every peer in the call's one
// round (which also carries the fingerprints), then every rank reduces the n contributions itself,
// in rank order 0..n-1, so that all ranks compute the same bits.
// Cost: alpha + (n-1)·S·beta + (n-1)·S·gamma, the best choice while alpha dominates.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

void directAllreduce(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
