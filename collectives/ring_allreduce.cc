// Ring all-reduce over n ranks, each holding S bytes cut into n chunks:
//
//        +--------+     +--------+     +--------+     +--------+
//   +--> | rank 0 | --> | rank 1 | --> | rank 2 | --> | rank 3 | --+
//   |    +--------+     +--------+     +--------+     +--------+   |
//   +--------------------------------------------------------------+
//
//   reduce-scatter, step t = 0 .. n-2: rank r sends chunk (r - t) to its right neighbour and
//     receives chunk (r - t - 1) from its left, which it reduces with its own copy of that chunk.
//     After n-1 steps rank r holds chunk (r + 1) reduced over all ranks (divided by n for kAvg).
//   all-gather, step s = 0 .. n-2: rank r sends chunk (r + 1 - s) and receives chunk (r - s),
//     copying the finished chunks around the ring.
//
// Each rank sends 2(n-1) chunks of S/n bytes, so with per-message latency alpha, per-byte
// transfer time beta and per-byte reduction time gamma:
//
//     T = 2(n-1)·alpha + 2(n-1)/n·S·beta + (n-1)/n·S·gamma
//
// which is bandwidth-optimal: busbw = (S/T)·2(n-1)/n approaches the link bandwidth.
//
// Pipelining: every chunk is cut into the same number of segments (ring_geometry.h) and the
// 2(n-1) steps become a stream of units (step, segment). Up to `depth` receives and `depth` sends
// are in flight; a segment is reduced as soon as it arrives, while it is still in cache and while
// the next segments are in transit, and the segment it produced is sent on at once. Received
// reduce-scatter segments land in the scratch ring (`depth` slots); all-gather segments land
// directly in the output.
#include "ring_allreduce.h"

#include <cstring>
#include <string>

#include "reduce_kernels.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {
int wrap(int value, int size) { return ((value % size) + size) % size; }
}  // namespace

RingAllreduce::RingAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
                             DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch)
    : rank_(rank), size_(size), left_(wrap(rank - 1, size)), right_(wrap(rank + 1, size)),
      send_(static_cast<const std::byte*>(send)), recv_(static_cast<std::byte*>(recv)), type_(type), op_(op),
      elementBytes_(dataTypeSize(type)), geometry_(count, size, elementBytes_, config.segmentBytes),
      segments_(geometry_.segmentsPerChunk()), depth_(static_cast<std::size_t>(config.depth)),
      reduceScatterUnits_(static_cast<std::size_t>(size - 1) * segments_), totalUnits_(2 * reduceScatterUnits_),
      slotBytes_(config.segmentBytes), scratch_(scratch), requests_(comm, 2 * depth_) {
  scratch_.reserve(depth_ * slotBytes_);
}

void RingAllreduce::startEarly() {
  // Unit 0 whatever its size, so that a neighbour can tell from the flag alone that one message
  // is coming. The receive takes a whole slot: a peer in a mismatched call may send another size.
  requests_.recv(recvSlot(0), scratchSlot(0), slotBytes_, left_, kTagRing);
  const ElementRange range = sendRange(0);
  requests_.send(sendSlot(0), send_ + range.begin * elementBytes_, range.count * elementBytes_, right_, kTagRing);
  recvPosted_ = sendPosted_ = 1;
}

void RingAllreduce::withdrawEarly(bool leftSentEarly, Deadline& deadline) {
  if (leftSentEarly) {
    requests_.waitDiscarding(recvSlot(0), deadline);
  } else {
    requests_.cancel(recvSlot(0));
  }
  requests_.wait(sendSlot(0), deadline);  // the right neighbour receives or discards it
  recvPosted_ = recvDone_ = sendPosted_ = sendDone_ = totalUnits_;
}

void RingAllreduce::run(Deadline& deadline) {
  while (recvDone_ < totalUnits_ || sendDone_ < totalUnits_) {
    bool progressed = postReceives() | postSends();
    if (recvDone_ < recvPosted_ && requests_.test(recvSlot(recvDone_))) {
      finishReceive(recvDone_++);
      progressed = true;
    }
    while (sendDone_ < sendPosted_ && requests_.test(sendSlot(sendDone_))) {
      ++sendDone_;
      progressed = true;
    }
    if (progressed) {
      deadline.progressed();
    } else {
      deadline.idle([this] { return requests_.pendingPeers(); });
    }
  }
}

int RingAllreduce::sendChunk(std::size_t t) const {
  const int s = static_cast<int>(t);
  return s < size_ - 1 ? wrap(rank_ - s, size_) : wrap(rank_ + 1 - (s - (size_ - 1)), size_);
}

int RingAllreduce::recvChunk(std::size_t t) const {
  const int s = static_cast<int>(t);
  return s < size_ - 1 ? wrap(rank_ - s - 1, size_) : wrap(rank_ - (s - (size_ - 1)), size_);
}

ElementRange RingAllreduce::sendRange(std::size_t unit) const {
  return geometry_.segment(sendChunk(step(unit)), segmentOf(unit));
}

ElementRange RingAllreduce::recvRange(std::size_t unit) const {
  return geometry_.segment(recvChunk(step(unit)), segmentOf(unit));
}

bool RingAllreduce::postReceives() {
  bool posted = false;
  while (recvPosted_ < totalUnits_ && recvPosted_ < recvDone_ + depth_) {
    const std::size_t unit = recvPosted_;
    // An all-gather segment overwrites the region this rank sent at step (t - (n-1)); that
    // send must have left before the region is reused (it is the same region when in place).
    if (!inReduceScatter(unit) && sendDone_ <= unit - reduceScatterUnits_) break;
    const ElementRange range = recvRange(unit);
    if (range.count > 0) {
      void* target = inReduceScatter(unit) ? static_cast<void*>(scratchSlot(unit))
                                           : static_cast<void*>(recv_ + range.begin * elementBytes_);
      requests_.recv(recvSlot(unit), target, range.count * elementBytes_, left_, kTagRing);
    }
    ++recvPosted_;
    posted = true;
  }
  return posted;
}

bool RingAllreduce::postSends() {
  bool posted = false;
  while (sendPosted_ < totalUnits_ && sendPosted_ < sendDone_ + depth_) {
    const std::size_t unit = sendPosted_;
    // Step t sends what step t-1 received (and reduced) for the same segment.
    if (step(unit) > 0 && recvDone_ <= unit - segments_) break;
    const ElementRange range = sendRange(unit);
    if (range.count > 0) {
      const std::byte* source = step(unit) == 0 ? send_ : recv_;
      requests_.send(sendSlot(unit), source + range.begin * elementBytes_, range.count * elementBytes_, right_,
                     kTagRing);
    }
    ++sendPosted_;
    posted = true;
  }
  return posted;
}

void RingAllreduce::finishReceive(std::size_t unit) {
  const ElementRange range = recvRange(unit);
  if (range.count == 0) return;  // nothing was posted (or, for an early unit 0, nothing expected)
  const std::size_t expected = range.count * elementBytes_;
  if (requests_.receivedBytes(recvSlot(unit)) != expected)
    throw BackendError("ring received " + std::to_string(requests_.receivedBytes(recvSlot(unit))) +
                        " bytes from rank " + std::to_string(left_) + ", expected " + std::to_string(expected) +
                        " (ranks disagree about the call; RINGSYNC_CHECK=1 names them)");
  if (!inReduceScatter(unit)) return;  // all-gather data landed in place
  const std::size_t offset = range.begin * elementBytes_;
  const bool lastStep = step(unit) == static_cast<std::size_t>(size_ - 2);
  if (lastStep && op_ == ReduceOp::kAvg) {
    // The chunk this rank owns is now complete: divide once, before the all-gather copies it.
    sumAndDivideElements(recv_ + offset, send_ + offset, scratchSlot(unit), range.count, type_, size_);
  } else {
    reduceElements(recv_ + offset, send_ + offset, scratchSlot(unit), range.count, type_, op_);
  }
}

void ringAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
                   DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch,
                   Deadline& deadline) {
  if (size == 1) {
    if (send != recv && count > 0) std::memcpy(recv, send, count * dataTypeSize(type));
    return;  // kAvg over one rank divides by 1
  }
  RingAllreduce ring(comm, rank, size, send, recv, count, type, op, config, scratch);
  ring.run(deadline);
}

}  // namespace ringsync::detail
