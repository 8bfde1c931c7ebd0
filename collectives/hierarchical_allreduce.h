// The all-reduce for ranks on several nodes with L >= 2 ranks on every node (node_hierarchy.h):
//
//   1. inside each node, split's reduce-scatter through shared memory: local rank k ends with
//      chunk k of the node's sum (split_allreduce.h, round 1 and the own-chunk reduction)
//   2. across nodes, local rank k of every node all-reduces chunk k with the ring over MPI
//      point-to-point; the L rings run in parallel, each over 1/L of the message
//   3. inside each node, split's all-gather (round 2)
//
// Only S/L bytes per rank cross the network, against the flat ring's 2(n-1)/n·S over the
// slowest (network) edge. kAvg sums in both levels and divides once by the total rank count, on
// the chunk the ring finished, so every rank holds the same bits.
//
// Checks: one fingerprint round on the whole communicator first, so every rank sees every call
// and a disagreement anywhere (inside a node, between nodes, or a count that put another rank on
// a different algorithm) raises on every rank before any phase starts; the phases exchange no
// fingerprints of their own. One Deadline, the call's, covers every phase.
//
// Pipelined in pieces of up to 2 MiB (and what a node round carries): piece p's cross-node ring
// runs while the node all-gathers piece p-1 and reduce-scatters piece p+1, so the network is not
// idle during the shared-memory phases (2 hosts x 2 ranks at 2 Gbit/s, 16 MiB: 0.30 -> 0.34 GB/s
// busbw). The ring among the nodes sends segments that fit Open MPI's eager limit
// (Options::ringSegmentBytesAcrossNodes): none waits for a rendezvous reply queued behind the
// bulk data coming the other way.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Needs context.hierarchy; contiguous buffers (args.scattered unset). send == recv: in place.
void hierarchicalAllreduce(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
