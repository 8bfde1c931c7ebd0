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
#include "ring_geometry.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

int wrap(int value, int size) { return ((value % size) + size) % size; }

class RingPipeline {
 public:
  RingPipeline(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
               DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch)
      : rank_(rank), size_(size), left_(wrap(rank - 1, size)), right_(wrap(rank + 1, size)),
        send_(static_cast<const std::byte*>(send)), recv_(static_cast<std::byte*>(recv)),
        type_(type), op_(op), elementBytes_(dataTypeSize(type)),
        geometry_(count, size, elementBytes_, config.segmentBytes),
        segments_(geometry_.segmentsPerChunk()), depth_(static_cast<std::size_t>(config.depth)),
        reduceScatterUnits_(static_cast<std::size_t>(size - 1) * segments_),
        totalUnits_(2 * reduceScatterUnits_), scratch_(scratch), requests_(comm, 2 * depth_) {
    slotBytes_ = config.segmentBytes;
  }

  void run(Deadline& deadline) {
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

 private:
  std::size_t step(std::size_t unit) const { return unit / segments_; }
  std::size_t segmentOf(std::size_t unit) const { return unit % segments_; }
  std::size_t recvSlot(std::size_t unit) const { return unit % depth_; }
  std::size_t sendSlot(std::size_t unit) const { return depth_ + unit % depth_; }
  bool inReduceScatter(std::size_t unit) const { return unit < reduceScatterUnits_; }

  int sendChunk(std::size_t t) const {
    const int s = static_cast<int>(t);
    return s < size_ - 1 ? wrap(rank_ - s, size_) : wrap(rank_ + 1 - (s - (size_ - 1)), size_);
  }
  int recvChunk(std::size_t t) const {
    const int s = static_cast<int>(t);
    return s < size_ - 1 ? wrap(rank_ - s - 1, size_) : wrap(rank_ - (s - (size_ - 1)), size_);
  }
  ElementRange sendRange(std::size_t unit) const { return geometry_.segment(sendChunk(step(unit)), segmentOf(unit)); }
  ElementRange recvRange(std::size_t unit) const { return geometry_.segment(recvChunk(step(unit)), segmentOf(unit)); }
  std::byte* scratchSlot(std::size_t unit) { return scratch_.data() + recvSlot(unit) * slotBytes_; }

  bool postReceives() {
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

  bool postSends() {
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

  void finishReceive(std::size_t unit) {
    const ElementRange range = recvRange(unit);
    if (range.count == 0) return;
    const std::size_t expected = range.count * elementBytes_;
    if (requests_.receivedBytes(recvSlot(unit)) != expected)
      throw MismatchError("ring received " + std::to_string(requests_.receivedBytes(recvSlot(unit))) +
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

  int rank_, size_, left_, right_;
  const std::byte* send_;
  std::byte* recv_;
  DataType type_;
  ReduceOp op_;
  std::size_t elementBytes_;
  RingGeometry geometry_;
  std::size_t segments_, depth_, reduceScatterUnits_, totalUnits_;
  std::size_t slotBytes_ = 0;
  ScratchBuffer& scratch_;
  RequestGroup requests_;
  std::size_t recvPosted_ = 0, recvDone_ = 0, sendPosted_ = 0, sendDone_ = 0;
};

}  // namespace

void ringAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
                   DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch,
                   Deadline& deadline) {
  if (size == 1) {
    if (send != recv && count > 0) std::memcpy(recv, send, count * dataTypeSize(type));
    return;  // kAvg over one rank divides by 1
  }
  scratch.reserve(static_cast<std::size_t>(config.depth) * config.segmentBytes);
  RingPipeline pipeline(comm, rank, size, send, recv, count, type, op, config, scratch);
  pipeline.run(deadline);
}

}  // namespace ringsync::detail
