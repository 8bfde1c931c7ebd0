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
// Checked as Rabenseifner's all-reduce is (rabenseifner_allreduce.h): every message carries the
// call summary in recursive doubling's format and partner order; the output is written only once
// every rank holds every rank's call (the all-gather gathers into working memory, then copies), so
// a disagreement raises MismatchError on every rank with the output untouched. Where the nodes hold
// L >= 2 ranks (the halves run there only when forced) a fingerprint round comes first: a peer in
// another call may be waiting in a node round. kAvg divides once, by the rank that finishes the block.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

// Need context.doublingBuffers and context.pieceScratch; contiguous buffers; in place as call.h says.
void recursiveHalvingReduceScatter(AlgorithmContext& context, const Call& call);
void recursiveDoublingAllgather(AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
