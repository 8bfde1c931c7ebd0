// The host ring all-reduce: reduce-scatter then all-gather, segmented and pipelined over MPI
// non-blocking point-to-point. See ring_allreduce.cc for the diagram and the cost model.
#pragma once

#include <mpi.h>

#include "algorithms.h"
#include "transport.h"

namespace ringsync::detail {

// recv = op over all ranks of send (send == recv: in place). Every rank ends with the same bits:
// each chunk is reduced once, by the ranks along the ring in a fixed order, then copied around.
// The fingerprint round overlaps the ring's first segment (kFlagEarlyRingSend).
void ringAllreduce(AlgorithmContext& context, const AllreduceArgs& args);

// For the first round of any other call (algorithm_context.cc): the left neighbour started a ring
// early while this rank is in another call; consume its segment so nothing stale is left behind.
void discardStrayRingSegment(MPI_Comm comm, int left, Deadline& deadline);

}  // namespace ringsync::detail
