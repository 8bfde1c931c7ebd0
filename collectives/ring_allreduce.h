// The host ring all-reduce: reduce-scatter then all-gather, segmented and pipelined over MPI
// non-blocking point-to-point. See ring_allreduce.cc for the diagram and the cost model.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "ring_geometry.h"
#include "ringsync/types.h"
#include "scratch_buffer.h"
#include "transport.h"

namespace ringsync::detail {

struct RingConfig {
  std::size_t segmentBytes;  // pipelining unit; the largest message the ring sends
  int depth;                 // segments in flight per direction (>= 2)
};

// recv = op over all ranks of send (send == recv: in place). `scratch` must hold at least
// depth * segmentBytes. Every rank ends with the same bits: each chunk is reduced once, by the
// ranks along the ring in a fixed order, then copied around.
void ringAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
                   DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch,
                   Deadline& deadline);

// The same algorithm as an object, for a caller that overlaps the call's fingerprint exchange
// with the first transfer (src/host_collectives.cc):
//   RingAllreduce ring(...); exchange.begin(...); ring.startEarly();
//   exchange.complete(); check -> on disagreement ring.withdrawEarly(...) and throw; else ring.run().
// startEarly() sends exactly one message to the right neighbour (possibly empty) and posts one
// receive from the left, whatever the count; the caller advertises it with kFlagEarlyRingSend.
// Needs at least two ranks.
class RingAllreduce {
 public:
  RingAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count, DataType type,
                ReduceOp op, const RingConfig& config, ScratchBuffer& scratch);
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  void startEarly();
  // The call did not match: consume the left neighbour's early message (when it sent one, i.e.
  // its header had kFlagEarlyRingSend) or withdraw the receive, and wait until the right
  // neighbour has taken ours, so that no ring message outlives this call.
  void withdrawEarly(bool leftSentEarly, Deadline& deadline);
  void run(Deadline& deadline);

 private:
  std::size_t step(std::size_t unit) const { return unit / segments_; }
  std::size_t segmentOf(std::size_t unit) const { return unit % segments_; }
  std::size_t recvSlot(std::size_t unit) const { return unit % depth_; }
  std::size_t sendSlot(std::size_t unit) const { return depth_ + unit % depth_; }
  bool inReduceScatter(std::size_t unit) const { return unit < reduceScatterUnits_; }
  int sendChunk(std::size_t t) const;
  int recvChunk(std::size_t t) const;
  ElementRange sendRange(std::size_t unit) const;
  ElementRange recvRange(std::size_t unit) const;
  std::byte* scratchSlot(std::size_t unit) { return scratch_.data() + recvSlot(unit) * slotBytes_; }
  bool postReceives();
  bool postSends();
  void finishReceive(std::size_t unit);

  int rank_, size_, left_, right_;
  const std::byte* send_;
  std::byte* recv_;
  DataType type_;
  ReduceOp op_;
  std::size_t elementBytes_;
  RingGeometry geometry_;
  std::size_t segments_, depth_, reduceScatterUnits_, totalUnits_, slotBytes_;
  ScratchBuffer& scratch_;
  RequestGroup requests_;
  std::size_t recvPosted_ = 0, recvDone_ = 0, sendPosted_ = 0, sendDone_ = 0;
};

}  // namespace ringsync::detail
