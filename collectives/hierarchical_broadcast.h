// Broadcast across nodes with the same number (>= 2) of ranks on each (node_hierarchy.h):
//
//   1. the ranks with the root's local rank, one per node, pass the message along the pipelined
//      chain (chain_broadcast.h) over their cross-node communicator;
//   2. inside every node that rank hands it to the others through shared-memory rounds, in pieces
//      of what a node round carries.
//
// The network carries the message once into each node, where the direct round sends it to every
// remote rank (L times into each node) and the chain over all ranks crosses between nodes as often
// as the rank numbering alternates between them. Checks: the whole-communicator fingerprint round
// first, as the chain does, so that no phase waits for a peer in another call.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Needs context.hierarchy.
void hierarchicalBroadcast(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
