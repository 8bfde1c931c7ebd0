// The small-message all-reduce: every rank sends its whole buffer to every peer in one message
// (the HeaderExchange round that also carries the call fingerprint), then every rank reduces the
// n contributions itself, in rank order 0..n-1, so that all ranks compute the same bits.
// Cost: alpha + (n-1)·S·beta + (n-1)·S·gamma, the best choice while alpha dominates.
#pragma once

#include <cstddef>

#include "header_exchange.h"
#include "ringsync/types.h"

namespace ringsync::detail {

// After exchange.run() with every rank's `count` elements attached: recv = op over all payloads.
void directReduce(const HeaderExchange& exchange, void* recv, std::size_t count, DataType type, ReduceOp op);

}  // namespace ringsync::detail
