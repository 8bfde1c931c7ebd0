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
// reduce-scatter segments land in the scratch ring (`depth` slots; the first segment in a slot
// of its own where it must hold more, ring_config.h's earlyReceiveBytes); all-gather segments land
// directly in the output.
#include "ring_allreduce.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "chunk_layout.h"
#include "mpi_check.h"
#include "reduce_kernels.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {
int wrap(int value, int size) { return ((value % size) + size) % size; }

bool leftSentEarly(const AlgorithmContext& context) {
  const int left = wrap(context.rank - 1, context.size);
  return (context.rounds.header(left).flags & kFlagEarlyRingSend) != 0;
}
}  // namespace

// The ring as an object, so that its first transfer can overlap the call's fingerprint round:
//   startEarly(); round completes; check -> on disagreement withdrawEarly() and rethrow; else run().
// startEarly() sends exactly one message to the right neighbour (possibly empty) and posts one
// receive from the left, whatever the count; the header advertises it with kFlagEarlyRingSend.
// Needs at least two ranks.
class RingAllreduce {
 public:
  RingAllreduce(MPI_Comm comm, int rank, int size, const AllreduceArgs& args, const RingConfig& config,
                std::size_t earlyBytes, ScratchBuffer& scratch);
  RingAllreduce(const RingAllreduce&) = delete;
  RingAllreduce& operator=(const RingAllreduce&) = delete;

  void startEarly();
  // The call did not match: consume the left neighbour's early message (when it sent one, i.e.
  // its header had kFlagEarlyRingSend) or withdraw the receive, and wait until the right
  // neighbour has taken ours, so that no ring message outlives this call.
  void withdrawEarly(bool leftSentEarly, Deadline& deadline);
  void run(Deadline& deadline);
  // One pass over the requests without waiting: true when something completed or was posted.
  bool advance();
  bool done() const { return recvDone_ >= totalUnits_ && sendDone_ >= totalUnits_; }

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
  // The first segment has a slot of its own when it must hold more than a segment.
  std::byte* scratchSlot(std::size_t unit) {
    return scratch_.data() + (unit == 0 && earlyBytes_ > slotBytes_ ? depth_ * slotBytes_ : recvSlot(unit) * slotBytes_);
  }
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
  std::size_t segments_, depth_, reduceScatterUnits_, totalUnits_, slotBytes_, earlyBytes_;
  ScratchBuffer& scratch_;
  RequestGroup requests_;
  std::size_t recvPosted_ = 0, recvDone_ = 0, sendPosted_ = 0, sendDone_ = 0;
};

RingAllreduce::RingAllreduce(MPI_Comm comm, int rank, int size, const AllreduceArgs& args, const RingConfig& config,
                             std::size_t earlyBytes, ScratchBuffer& scratch)
    : rank_(rank), size_(size), left_(wrap(rank - 1, size)), right_(wrap(rank + 1, size)),
      send_(static_cast<const std::byte*>(args.send)), recv_(static_cast<std::byte*>(args.recv)), type_(args.type),
      op_(args.op), elementBytes_(dataTypeSize(args.type)),
      geometry_(args.count, size, elementBytes_, config.segmentBytes),
      segments_(geometry_.segmentsPerChunk()), depth_(static_cast<std::size_t>(config.depth)),
      reduceScatterUnits_(static_cast<std::size_t>(size - 1) * segments_), totalUnits_(2 * reduceScatterUnits_),
      slotBytes_(config.segmentBytes), earlyBytes_(std::max(earlyBytes, config.segmentBytes)), scratch_(scratch),
      requests_(comm, 2 * depth_) {
  scratch_.reserve(depth_ * slotBytes_ + (earlyBytes_ > slotBytes_ ? earlyBytes_ : 0));
}

void RingAllreduce::startEarly() {
  // Unit 0 whatever its size, so that a neighbour can tell from the flag alone that one message
  // is coming. The receive takes the first segment's whole slot: a peer in a mismatched call may
  // send another size.
  requests_.recv(recvSlot(0), scratchSlot(0), earlyBytes_, left_, kTagRing);
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
  while (!done()) {
    if (advance()) {
      deadline.progressed();
    } else {
      deadline.idle([this] { return requests_.pendingPeers(); });
    }
  }
}

bool RingAllreduce::advance() {
  bool progressed = postReceives() | postSends();
  if (recvDone_ < recvPosted_ && requests_.test(recvSlot(recvDone_))) {
    finishReceive(recvDone_++);
    progressed = true;
  }
  while (sendDone_ < sendPosted_ && requests_.test(sendSlot(sendDone_))) {
    ++sendDone_;
    progressed = true;
  }
  return progressed;
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

void ringAllreduce(AlgorithmContext& context, const AllreduceArgs& args) {
  RingInProgress ring(context, args);
  ring.finish();
}

RingInProgress::RingInProgress(AlgorithmContext& context, const AllreduceArgs& args) : context_(context) {
  if (context.size == 1) {
    fingerprintRound(context);
    if (args.send != args.recv && args.count > 0) std::memcpy(args.recv, args.send, args.count * dataTypeSize(args.type));
    return;  // kAvg over one rank divides by 1
  }
  ring_ = std::make_unique<RingAllreduce>(context.comm, context.rank, context.size, args,
                                          ringConfigFor(context.ring, context.wholeChunksBetweenTwoNodes, context.size,
                                                        args.count, dataTypeSize(args.type)),
                                          earlyReceiveBytes(context.ring, context.wholeChunksBetweenTwoNodes),
                                          context.ringScratch);
  RingAllreduce& ring = *ring_;
  if (context.check.wantsRound()) {
    // The fingerprints and the ring's first segment travel together, so the check costs no extra
    // latency. If the calls disagree, the early segments are taken off the wire before the error
    // propagates, so every rank stays in step and can name the ranks from the headers it received.
    CallHeader header = context.header;
    header.flags |= kFlagEarlyRingSend;
    const PayloadPiece none{};
    context.rounds.begin(header, &none, 1);
    ring.startEarly();
    try {
      context.rounds.complete(context.deadline);
      firstRoundDone(context);
    } catch (const MismatchError&) {
      ring.withdrawEarly(leftSentEarly(context), context.deadline);
      throw;
    } catch (const NonFiniteError&) {
      ring.withdrawEarly(leftSentEarly(context), context.deadline);
      throw;
    }
  }
}

RingInProgress::~RingInProgress() = default;

void RingInProgress::advance() {
  if (ring_ && ring_->advance()) context_.deadline.progressed();
}

void RingInProgress::finish() {
  if (ring_) ring_->run(context_.deadline);
}

// This rank is in another call and posted no receive for the left neighbour's early ring segment:
// take the message off the wire (any size) so it cannot match a later call.
void discardStrayRingSegment(MPI_Comm comm, int left, Deadline& deadline) {
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  int found = 0;
  while (true) {
    RINGSYNC_CHECK_MPI(MPI_Improbe(left, kTagRing, comm, &found, &message, &status));
    if (found) break;
    deadline.idle([left] { return std::vector<int>{left}; });
  }
  int bytes = 0;
  RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<std::byte> sink(static_cast<std::size_t>(bytes) + 1);
  RINGSYNC_CHECK_MPI(MPI_Mrecv(sink.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE));
  deadline.progressed();
}

}  // namespace ringsync::detail
