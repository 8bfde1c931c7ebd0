// The two halves of Rabenseifner's all-reduce as collectives of their own (butterfly.h), across
// all ranks of the communicator, for small and mid-sized blocks across nodes where the ring's n-1
// latencies dominate and a direct round no longer fits:
//
//   reduce-scatter by recursive halving  log2(n) steps of n/2, n/4, ... blocks; rank r ends with
//                                        block r of the reduced array (MPI_Reduce_scatter_block)
//   all-gather by recursive doubling     log2(n) steps of 1, 2, 4, ... blocks; every rank ends with
//                                        every rank's block in rank order
//
// n not a power of two: rank p+i first hands rank i its input (its whole array for the
// reduce-scatter, its block for the all-gather) and gets its result from rank i at the end. Per
// rank (p-1)/p of the array each way (plus the whole array once for the folded ranks), against
// the ring's (n-1)/n, in log2 latencies instead of n-1.
//
// Where the nodes hold L >= 2 ranks (N nodes) and a node round takes the call
// (halvesNodeRoundBytes), through the node's leader (local rank 0; node_leader.h), as Open MPI's
// HAN does: only the leaders cross the network, one message per node and step:
//
//   reduce-scatter  one node round hands the leader every local rank's input; it sums the node's
//                   copies, recursive halving among the N leaders over the node's L blocks, and a
//                   second node round hands each local rank its block
//   all-gather      one node round hands the leader the node's L blocks, recursive doubling among
//                   the leaders, and a second node round hands every local rank the whole array
//
// Two node rounds and log2 N latencies; (N-1)/N of the array crosses per node each way. Against
// one butterfly per local rank (each carrying its group of blocks) 1.2-1.7x faster at 2-8 KiB
// arrays on 2 hosts x 2 ranks, and against the whole array's all-reduce 1.3-1.6x at 32 B-1 KiB (RESULTS
// section 16.19). For small arrays across nodes: no fingerprint round across the nodes first (the
// hierarchical versions' first round, one latency across), no ring; elsewhere one butterfly across
// all ranks.
//
// Checked as Rabenseifner's all-reduce is: every message carries the call summary in recursive
// doubling's format and partner order (across nodes, the summary of the node's round; the others
// get the leaders' verdict in the second node round, node_leader.h); the output
// is written only once every rank holds every rank's call (the all-gather gathers into working
// memory, then copies), so a disagreement raises MismatchError on every rank with the output
// untouched. A flat butterfly where the nodes hold L >= 2 ranks (forced, or a call too large for a
// node round) starts with a fingerprint round: a peer in another call may be waiting in a node
// round. kAvg divides once, by the rank that finishes the block.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Need context.doublingBuffers and context.pieceScratch; contiguous buffers; in place as call.h says.
void recursiveHalvingReduceScatter(AlgorithmContext& context, const Call& call);
void recursiveDoublingAllgather(AlgorithmContext& context, const Call& call);

// The most the call's node round carries per rank across nodes of `localSize` ranks each (the
// halves go through the nodes while this fits RoundTransport::maxPayloadBytes).
std::size_t halvesNodeRoundBytes(CollectiveKind kind, std::size_t blockBytes, int localSize, int nodes);

}  // namespace ringsync::detail
