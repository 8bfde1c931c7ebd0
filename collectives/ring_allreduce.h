// The host ring all-reduce: reduce-scatter then all-gather, segmented and pipelined over MPI
// non-blocking point-to-point. See ring_allreduce.cc for the diagram and the cost model.
#pragma once

#include <memory>

#include <mpi.h>

#include "algorithms.h"
#include "transport.h"

namespace ringsync::detail {

// recv = op over all ranks of send (send == recv: in place). Every rank ends with the same bits:
// each chunk is reduced once, by the ranks along the ring in a fixed order, then copied around.
// The fingerprint round overlaps the ring's first segment (kFlagEarlyRingSend).
void ringAllreduce(AlgorithmContext& context, const AllreduceArgs& args);

class RingAllreduce;

// ringAllreduce in steps, for an algorithm that works while the ring's segments travel (the
// hierarchical all-reduce overlaps its shared-memory phases with it): the constructor exchanges
// the fingerprints (raising as ringAllreduce does) and starts the ring; advance() makes what
// progress it can without waiting; finish() waits for the rest under the context's deadline. The
// buffers must stay untouched by the caller until finish() returns.
class RingInProgress {
 public:
  RingInProgress(AlgorithmContext& context, const AllreduceArgs& args);
  ~RingInProgress();
  RingInProgress(const RingInProgress&) = delete;
  RingInProgress& operator=(const RingInProgress&) = delete;
  void advance();
  void finish();

 private:
  AlgorithmContext& context_;
  std::unique_ptr<RingAllreduce> ring_;  // null for one rank
};

// For the first round of any other call (algorithm_context.cc): the left neighbour started a ring
// early while this rank is in another call; consume its segment so nothing stale is left behind.
void discardStrayRingSegment(MPI_Comm comm, int left, Deadline& deadline);

}  // namespace ringsync::detail
