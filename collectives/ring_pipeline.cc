// The ring over n ranks, each holding S bytes cut into n chunks (chunk_layout.h):
//
//        +--------+     +--------+     +--------+     +--------+
//   +--> | rank 0 | --> | rank 1 | --> | rank 2 | --> | rank 3 | --+
//   |    +--------+     +--------+     +--------+     +--------+   |
//   +--------------------------------------------------------------+
//
//   reduce-scatter, step t = 0 .. n-2: rank r sends chunk (o - t - 1) to its right neighbour and
//     receives chunk (o - t - 2) from its left, which it reduces with its own copy of that chunk.
//     After n-1 steps rank r holds chunk o reduced over all ranks (divided by n for kAvg).
//   all-gather, step s = 0 .. n-2: rank r sends chunk (o - s) and receives chunk (o - s - 1),
//     copying the finished chunks around the ring.
//
// o is the chunk rank r owns: r for the reduce-scatter and the all-gather on their own (block r,
// as MPI_Reduce_scatter_block and MPI_Allgather place them), r + 1 inside the all-reduce (whose
// reduce-scatter then starts by sending the rank's own chunk r, and whose all-gather starts where
// it ended). Each phase sends n-1 chunks of S/n bytes per rank, so with per-message latency alpha,
// per-byte transfer time beta and per-byte reduction time gamma:
//
//     all-reduce      T = 2(n-1)·alpha + 2(n-1)/n·S·beta + (n-1)/n·S·gamma
//     reduce-scatter  T =  (n-1)·alpha +  (n-1)/n·S·beta + (n-1)/n·S·gamma
//     all-gather      T =  (n-1)·alpha +  (n-1)/n·S·beta
//
// which is bandwidth-optimal: busbw = (S/T)·2(n-1)/n (all-reduce) or (S/T)·(n-1)/n approaches the
// link bandwidth.
//
// Pipelining: every chunk is cut into the same number of segments (RingGeometry) and the steps of
// both phases become one stream of units (step, segment). Up to `depth` receives and `depth` sends
// are in flight; a segment is reduced as soon as it arrives, while it is still in cache and while
// the next segments are in transit, and the segment it produced is sent on at once. Received
// reduce-scatter segments land in the scratch ring (`depth` slots; the first segment in a slot of
// its own where it must hold more, ring_config.h's earlyReceiveBytes); all-gather segments land
// directly in the output. The all-reduce reduces into its output; the reduce-scatter alone, whose
// output holds one chunk, keeps the chunks in transit in two chunk-sized partial sums (steps of
// one parity share one; a step writes its partial only once the step before it sent that
// partial's previous content on).
#include "ring_pipeline.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "chunk_layout.h"
#include "mpi_check.h"
#include "reduce_kernels.h"
#include "ring_config.h"
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
// receive from the left into scratch, whatever the count; the header advertises it with
// kFlagEarlyRingSend. Needs at least two ranks.
class RingPipeline {
 public:
  RingPipeline(MPI_Comm comm, int rank, int size, const Call& call, const RingConfig& config, std::size_t earlyBytes,
               ScratchBuffer& scratch, ScratchBuffer* partials);
  RingPipeline(const RingPipeline&) = delete;
  RingPipeline& operator=(const RingPipeline&) = delete;

  void startEarly();
  // The call did not match: consume the left neighbour's early message (when it sent one, i.e.
  // its header had kFlagEarlyRingSend) or withdraw the receive, and wait until the right
  // neighbour has taken ours, so that no ring message outlives this call.
  void withdrawEarly(bool leftSentEarly, Deadline& deadline);
  void run(Deadline& deadline);
  // One pass over the requests without waiting: true when something completed or was posted.
  bool advance();
  bool done() const { return recvDone_ >= totalUnits_ && sendDone_ >= totalUnits_; }
  // After done(): the all-gather alone copies this rank's own block into place last.
  void placeOwnBlock();

 private:
  std::size_t step(std::size_t unit) const { return unit / segments_; }
  std::size_t segmentOf(std::size_t unit) const { return unit % segments_; }
  std::size_t recvSlot(std::size_t unit) const { return unit % depth_; }
  std::size_t sendSlot(std::size_t unit) const { return depth_ + unit % depth_; }
  bool inReduceScatter(std::size_t unit) const { return unit < reduceScatterUnits_; }
  bool onlyReduceScatter() const { return reduceScatterUnits_ == totalUnits_; }
  bool onlyAllgather() const { return reduceScatterUnits_ == 0; }
  int sendChunk(std::size_t unit) const;
  int recvChunk(std::size_t unit) const;
  ElementRange sendRange(std::size_t unit) const { return geometry_.segment(sendChunk(unit), segmentOf(unit)); }
  ElementRange recvRange(std::size_t unit) const { return geometry_.segment(recvChunk(unit), segmentOf(unit)); }
  // The first segment has a slot of its own when it must hold more than a segment.
  std::byte* scratchSlot(std::size_t unit) {
    return scratch_.data() +
           (unit == 0 && earlyBytes_ > slotBytes_ ? depth_ * slotBytes_ : recvSlot(unit) * slotBytes_);
  }
  bool receivesIntoScratch(std::size_t unit) const { return inReduceScatter(unit) || unit == 0; }
  // Where the reduce-scatter alone keeps the partial sum of `unit`'s segment (step t of unit): one
  // of two chunk-sized regions by the parity of t (every chunk has the same length there).
  std::byte* partial(std::size_t unit) const {
    const std::size_t chunkBytes = geometry_.length(0) * elementBytes_;
    return partials_ + (step(unit) % 2) * chunkBytes +
           evenPart(geometry_.length(0), segments_, segmentOf(unit)).begin * elementBytes_;
  }
  const std::byte* sendSource(std::size_t unit, const ElementRange& range);
  std::byte* reduceTarget(std::size_t unit, const ElementRange& range);
  bool postReceives();
  bool postSends();
  bool mayFinish(std::size_t unit) const;
  void finishReceive(std::size_t unit);

  int rank_, size_, left_, right_;
  const std::byte* send_;
  std::byte* recv_;
  DataType type_;
  ReduceOp op_;
  std::size_t elementBytes_;
  RingGeometry geometry_;
  int ownShift_;  // the owned chunk is rank + ownShift_ (see the diagram)
  std::size_t segments_, depth_, reduceScatterUnits_, totalUnits_, slotBytes_, earlyBytes_;
  ScratchBuffer& scratch_;
  std::byte* partials_ = nullptr;  // the reduce-scatter alone: two chunk-sized partial sums
  RequestGroup requests_;
  std::size_t recvPosted_ = 0, recvDone_ = 0, sendPosted_ = 0, sendDone_ = 0;
};

namespace {
std::size_t phaseUnits(CollectiveKind kind, CollectiveKind phase, int size, std::size_t segments) {
  const bool runs = kind == CollectiveKind::kAllreduce || kind == phase;
  return runs ? static_cast<std::size_t>(size - 1) * segments : 0;
}
}  // namespace

RingPipeline::RingPipeline(MPI_Comm comm, int rank, int size, const Call& call, const RingConfig& config,
                           std::size_t earlyBytes, ScratchBuffer& scratch, ScratchBuffer* partials)
    : rank_(rank),
      size_(size),
      left_(wrap(rank - 1, size)),
      right_(wrap(rank + 1, size)),
      send_(static_cast<const std::byte*>(call.send)),
      recv_(static_cast<std::byte*>(call.recv)),
      type_(call.type),
      op_(call.op),
      elementBytes_(call.elementBytes()),
      geometry_(std::max(call.sendCount(size), call.recvCount(size)), size, elementBytes_, config.segmentBytes),
      ownShift_(call.kind == CollectiveKind::kAllreduce ? 1 : 0),
      segments_(geometry_.segmentsPerChunk()),
      depth_(static_cast<std::size_t>(config.depth)),
      reduceScatterUnits_(phaseUnits(call.kind, CollectiveKind::kReduceScatter, size, segments_)),
      totalUnits_(reduceScatterUnits_ + phaseUnits(call.kind, CollectiveKind::kAllgather, size, segments_)),
      slotBytes_(config.segmentBytes),
      earlyBytes_(std::max(earlyBytes, config.segmentBytes)),
      scratch_(scratch),
      requests_(comm, 2 * depth_) {
  scratch_.reserve(depth_ * slotBytes_ + (earlyBytes_ > slotBytes_ ? earlyBytes_ : 0));
  if (onlyReduceScatter() && size_ > 2) {
    if (partials == nullptr) throw InvalidArgument("reducescatter: the ring needs the communicator's partial sums");
    partials->reserve(2 * geometry_.length(0) * elementBytes_);
    partials_ = partials->data();
  }
}

void RingPipeline::startEarly() {
  // Unit 0 whatever its size, so that a neighbour can tell from the flag alone that one message
  // is coming. The receive takes the first segment's whole slot: a peer in a mismatched call may
  // send another size.
  requests_.recv(recvSlot(0), scratchSlot(0), earlyBytes_, left_, kTagRing);
  const ElementRange range = sendRange(0);
  requests_.send(sendSlot(0), sendSource(0, range), range.count * elementBytes_, right_, kTagRing);
  recvPosted_ = sendPosted_ = 1;
}

void RingPipeline::withdrawEarly(bool leftSentEarly, Deadline& deadline) {
  if (leftSentEarly) {
    requests_.waitDiscarding(recvSlot(0), deadline);
  } else {
    requests_.cancel(recvSlot(0));
  }
  requests_.wait(sendSlot(0), deadline);  // the right neighbour receives or discards it
  recvPosted_ = recvDone_ = sendPosted_ = sendDone_ = totalUnits_;
}

void RingPipeline::run(Deadline& deadline) {
  while (!done()) {
    if (advance()) {
      deadline.progressed();
    } else {
      deadline.idle([this] { return requests_.pendingPeers(); });
    }
  }
}

bool RingPipeline::advance() {
  bool progressed = postReceives() | postSends();
  if (recvDone_ < recvPosted_ && mayFinish(recvDone_) && requests_.test(recvSlot(recvDone_))) {
    finishReceive(recvDone_++);
    progressed = true;
  }
  while (sendDone_ < sendPosted_ && requests_.test(sendSlot(sendDone_))) {
    ++sendDone_;
    progressed = true;
  }
  return progressed;
}

int RingPipeline::sendChunk(std::size_t unit) const {
  const int t = static_cast<int>(step(unit)), own = rank_ + ownShift_;
  return inReduceScatter(unit) ? wrap(own - t - 1, size_)
                               : wrap(own - (t - static_cast<int>(reduceScatterUnits_ / segments_)), size_);
}

int RingPipeline::recvChunk(std::size_t unit) const { return wrap(sendChunk(unit) - 1, size_); }

// Reduce-scatter step 0 sends the input; later steps send what the step before reduced (the same
// chunk and segment as unit - segments received); the all-gather sends the finished chunks.
const std::byte* RingPipeline::sendSource(std::size_t unit, const ElementRange& range) {
  const std::size_t offset = range.begin * elementBytes_;
  if (inReduceScatter(unit)) {
    if (step(unit) == 0) return send_ + offset;
    return onlyReduceScatter() ? partial(unit - segments_) : recv_ + offset;
  }
  // The all-gather alone starts from the rank's own block, which is `send` (in place or not).
  if (onlyAllgather() && step(unit) == 0) return send_ + (range.begin - geometry_.begin(rank_)) * elementBytes_;
  return recv_ + offset;
}

// Where a reduce-scatter unit's sum goes: the output for the all-reduce (every chunk has its place
// there) and for the last step of the reduce-scatter alone (the own block), else a partial sum.
std::byte* RingPipeline::reduceTarget(std::size_t unit, const ElementRange& range) {
  if (!onlyReduceScatter()) return recv_ + range.begin * elementBytes_;
  if (step(unit) + 2 == static_cast<std::size_t>(size_))
    return recv_ + (range.begin - geometry_.begin(rank_)) * elementBytes_;
  return partial(unit);
}

bool RingPipeline::postReceives() {
  bool posted = false;
  while (recvPosted_ < totalUnits_ && recvPosted_ < recvDone_ + depth_) {
    const std::size_t unit = recvPosted_;
    // Inside the all-reduce, an all-gather segment overwrites the region this rank sent at step
    // (t - (n-1)); that send must have left before the region is reused (it is the same region
    // when in place).
    if (!inReduceScatter(unit) && reduceScatterUnits_ > 0 && sendDone_ <= unit - reduceScatterUnits_) break;
    const ElementRange range = recvRange(unit);
    if (range.count > 0) {
      void* target = receivesIntoScratch(unit) ? static_cast<void*>(scratchSlot(unit))
                                               : static_cast<void*>(recv_ + range.begin * elementBytes_);
      requests_.recv(recvSlot(unit), target, range.count * elementBytes_, left_, kTagRing);
    }
    ++recvPosted_;
    posted = true;
  }
  return posted;
}

bool RingPipeline::postSends() {
  bool posted = false;
  while (sendPosted_ < totalUnits_ && sendPosted_ < sendDone_ + depth_) {
    const std::size_t unit = sendPosted_;
    // Step t sends what step t-1 received (and reduced) for the same segment.
    if (step(unit) > 0 && recvDone_ <= unit - segments_) break;
    const ElementRange range = sendRange(unit);
    if (range.count > 0)
      requests_.send(sendSlot(unit), sendSource(unit, range), range.count * elementBytes_, right_, kTagRing);
    ++sendPosted_;
    posted = true;
  }
  return posted;
}

// The reduce-scatter alone reuses a partial sum two steps later: the step in between must have
// sent its content on first.
bool RingPipeline::mayFinish(std::size_t unit) const {
  return !(onlyReduceScatter() && step(unit) >= 2 && sendDone_ <= unit - segments_);
}

void RingPipeline::finishReceive(std::size_t unit) {
  const ElementRange range = recvRange(unit);
  if (range.count == 0) return;  // nothing was posted (or, for an early unit 0, nothing expected)
  const std::size_t expected = range.count * elementBytes_;
  if (requests_.receivedBytes(recvSlot(unit)) != expected)
    throw BackendError("ring received " + std::to_string(requests_.receivedBytes(recvSlot(unit))) +
                       " bytes from rank " + std::to_string(left_) + ", expected " + std::to_string(expected) +
                       " (ranks disagree about the call; RINGSYNC_CHECK=1 names them)");
  if (!inReduceScatter(unit)) {
    // All-gather data landed in place, but for the all-gather alone's first segment, received
    // into scratch before the call was checked.
    if (receivesIntoScratch(unit)) std::memcpy(recv_ + range.begin * elementBytes_, scratchSlot(unit), expected);
    return;
  }
  const std::byte* own = send_ + range.begin * elementBytes_;
  std::byte* target = reduceTarget(unit, range);
  const bool lastStep = step(unit) + 2 == static_cast<std::size_t>(size_);
  if (lastStep && op_ == ReduceOp::kAvg) {
    // The chunk this rank owns is now complete: divide once, before the all-gather copies it.
    sumAndDivideElements(target, own, scratchSlot(unit), range.count, type_, size_);
  } else {
    reduceElements(target, own, scratchSlot(unit), range.count, type_, op_);
  }
}

void RingPipeline::placeOwnBlock() {
  if (!onlyAllgather()) return;
  const ElementRange own = geometry_.chunk(rank_);
  std::byte* target = recv_ + own.begin * elementBytes_;
  if (own.count > 0 && target != send_) std::memcpy(target, send_, own.count * elementBytes_);
}

void ringCollective(AlgorithmContext& context, const Call& call) { RingInProgress(context, call).finish(); }

std::string ringTrafficNote(const CallHeader& header, int ranks, bool wholeChunksBetweenTwoNodes) {
  const std::size_t n = static_cast<std::size_t>(ranks), elementBytes = dataTypeSize(header.dataType);
  const bool bothPhases = header.kind == CollectiveKind::kAllreduce;
  const std::size_t chunk = bothPhases ? (header.count + n - 1) / n : header.count;
  std::string note = ", " + std::to_string((bothPhases ? 2 : 1) * (n - 1) * chunk * elementBytes) +
                     " bytes sent per rank";
  if (bothPhases && sendsWholeChunks(wholeChunksBetweenTwoNodes, ranks, header.count, elementBytes))
    note += ", each chunk as one message";
  return note;
}

RingInProgress::RingInProgress(AlgorithmContext& context, const Call& call) : context_(context) {
  if (context.size == 1) {
    fingerprintRound(context);
    if (call.send != call.recv && call.count > 0) std::memcpy(call.recv, call.send, call.blockBytes());
    return;  // kAvg over one rank divides by 1
  }
  const std::size_t wholeCount = std::max(call.sendCount(context.size), call.recvCount(context.size));
  ring_ = std::make_unique<RingPipeline>(context.comm, context.rank, context.size, call,
                                         ringConfigFor(context.ring, context.wholeChunksBetweenTwoNodes, context.size,
                                                       wholeCount, call.elementBytes()),
                                         earlyReceiveBytes(context.ring, context.wholeChunksBetweenTwoNodes),
                                         context.ringScratch, context.ringPartials);
  RingPipeline& ring = *ring_;
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
  if (!ring_) return;
  ring_->run(context_.deadline);
  ring_->placeOwnBlock();
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
