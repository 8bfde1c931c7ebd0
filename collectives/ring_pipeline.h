// The ring's two phases, segmented and pipelined over MPI non-blocking point-to-point, run alone
// (reduce-scatter, all-gather) or back to back as one pipeline (all-reduce, so the first finished
// chunks travel on while the last are still being reduced): ring_pipeline.cc has the diagram and
// the cost model.
#pragma once

#include <memory>
#include <string>

#include <mpi.h>

#include "algorithm_context.h"
#include "call.h"
#include "transport.h"

namespace ringsync::detail {

class RingPipeline;

// The ring for the call's collective (the table's ring row of each), on host buffers:
//   kAllreduce      recv = op over all ranks of send (in place when send == recv); every rank ends
//                   with the same bits: each chunk is reduced once, along the ring in a fixed
//                   order, then copied around
//   kReduceScatter  recv = block `rank` of op over every rank's send (in place when recv is that
//                   block of send)
//   kAllgather      recv = every rank's send in rank order (in place when send is this rank's
//                   block of recv)
// The fingerprint round overlaps the ring's first segment (kFlagEarlyRingSend).
void ringCollective(AlgorithmContext& context, const Call& call);

// What the ring sends per rank for the call, for RINGSYNC_LOG=info: ", 786432 bytes sent per rank"
// (one chunk per step, n-1 steps per phase), and ", each chunk as one message" where it does.
std::string ringTrafficNote(const CallHeader& header, int ranks, bool wholeChunksBetweenTwoNodes);

// A ring call in steps, for an algorithm that works while the ring's segments travel (the
// hierarchical all-reduce overlaps its shared-memory phases with it): the constructor exchanges
// the fingerprints (raising MismatchError / NonFiniteError as every algorithm's first round does)
// and starts the ring; advance() makes what progress it can without waiting; finish() waits for
// the rest under the context's deadline. The buffers must stay untouched by the caller until
// finish() returns. `call.kind` picks the phases: kAllreduce both, kReduceScatter or kAllgather one.
class RingInProgress {
 public:
  RingInProgress(AlgorithmContext& context, const Call& call);
  ~RingInProgress();
  RingInProgress(const RingInProgress&) = delete;
  RingInProgress& operator=(const RingInProgress&) = delete;
  void advance();
  void finish();

 private:
  AlgorithmContext& context_;
  std::unique_ptr<RingPipeline> ring_;  // null for one rank
};

// For the first round of any other call (algorithm_context.cc): the left neighbour started a ring
// early while this rank is in another call; consume its segment so nothing stale is left behind.
void discardStrayRingSegment(MPI_Comm comm, int left, Deadline& deadline);

}  // namespace ringsync::detail
