// The latency-optimal all-reduce across nodes, for small and mid-sized messages:
//
//   1. inside each node, one shared-memory round carries every local rank's whole buffer (and
//      call fingerprint); local rank k reduces its part of it: chunk k (the message is cut into
//      L chunks, "sharded"), or for messages below the shard size the node's leader (local rank
//      0) all of it
//   2. across nodes, the ranks with the same local rank reduce that part by recursive doubling
//      (recursive_doubling.h): log2(N) exchanges with one partner each, one for 2 nodes, in
//      parallel over the L local ranks; below the shard size the leaders alone (node_leader.h:
//      one rank and one message per node and step on the network)
//   3. a second shared-memory round gathers the chunks inside the node, or hands out the leader's
//      result (with the leaders' verdict)
//
// With one rank per node, or nodes of different sizes, there is no node phase: recursive doubling
// across all ranks. Against the direct exchange (each rank's buffer to every peer, n-1 messages
// per rank over the network) and the hierarchical ring (a whole-communicator fingerprint round,
// then 2(N-1) ring steps, pipelined): one cross-node latency for 2 nodes and S/L bytes per rank.
//
// Checks without a round of their own: the node round carries every local rank's fingerprint,
// every cross-node message a summary of the calls behind its data (call_summary.h), so when the
// doubling ends every rank holds every rank's call and the same verdict (the leader's ranks get
// it in the second node round and meet their local-rank peers once more: node_leader.h); a disagreement raises
// MismatchError (NonFiniteError) on every rank, before the caller's buffer is written. A peer that
// took another algorithm for this call (its count crossed a threshold, another collective) starts
// a whole-communicator round instead; every wait here looks for that, and on seeing it this rank
// takes back its node round, joins the peer's round and raises from it, as every algorithm's first
// round does. Messages left behind by such an abandoned call are recognised and dropped later.
// kAvg sums and divides once by the rank count. One Deadline, the call's, covers every wait.
// Not carried: the arrival times of every rank (the summary keeps calls, not observations), so
// these calls are missing from the straggler report's arrival statistics (src/call_tracer.h).
// A node whose rounds fell back to point-to-point (no shared memory) cannot take back its node
// round when a peer took another algorithm: the mismatch is raised all the same, but that node's
// rounds are out of step afterwards (not handled; shared memory is there on every node here).
#pragma once

#include <cstddef>

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Needs context.doublingBuffers; contiguous buffers. Uses context.hierarchy when set (its node
// round must hold the whole message), else all ranks of context.comm. send == recv: in place.
void recursiveDoublingAllreduce(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
