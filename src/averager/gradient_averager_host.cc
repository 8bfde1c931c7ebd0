// The host runner. A bucket whose members lie back to back is all-reduced in place, as one span.
// Any other bucket is handed to the core as a ScatteredBuffer over its gradients: the split all-reduce (one
// node, buckets up to a shared-memory slot) reduces them where they lie, so a bucket costs what an
// all-reduce of its bytes costs, with no pack or unpack pass; for other algorithms (the ring across
// nodes, buckets beyond a slot) the core packs.
// With fp16 on the wire the conversion is the pack, into one persistent fused buffer.
// A gradient that moved (markReadyAt) has its bucket's spans bound again before the bucket runs.
#include <algorithm>
#include <chrono>
#include <cstdint>

#include "collectives/scattered_buffer.h"
#include "collectives/scratch_buffer.h"
#include "fusion_pack.h"
#include "gradient_averager_runner.h"
#include "ringsync/errors.h"
#include "src/core_access.h"

namespace ringsync::detail {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

bool sentAsFloat16(const Bucket& bucket, bool compressFp16) {
  return compressFp16 && bucket.type == DataType::kFloat32;
}

class HostRunner final : public BucketRunner {
 public:
  explicit HostRunner(const RunnerContext& context)
      : context_(context),
        bucketOf_(bucketOfGradient(*context.buckets, context.gradients->size())),
        moved_(context.buckets->size(), 0) {
    std::size_t fusedBytes = 0;
    const std::vector<Bucket>& buckets = *context_.buckets;
    spans_.resize(buckets.size());
    contiguous_.resize(buckets.size());
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const Bucket& bucket = buckets[b];
      if (bucket.onDevice) continue;
      if (sentAsFloat16(bucket, context_.compressFp16)) {
        fusedBytes = std::max(fusedBytes, bucket.count * sizeof(std::uint16_t));
      } else {
        bindSpans(b);
      }
    }
    // Allocated and touched once: a per-step temporary would pay first-touch faults every step.
    if (fusedBytes > 0) fused_.reserve(fusedBytes);
  }

  void noteMoved(std::size_t gradient) override { moved_[bucketOf_[gradient]] = 1; }

  void run(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    const Bucket& bucket = (*context_.buckets)[index];
    if (bucket.count == 0) return;  // only empty tensors: nothing to send (every rank agrees)
    if (moved_[index] && !sentAsFloat16(bucket, context_.compressFp16)) bindSpans(index);
    moved_[index] = 0;
    auto start = Clock::now();
    if (sentAsFloat16(bucket, context_.compressFp16)) {
      timing.path = "fp16";
      auto* wire = reinterpret_cast<std::uint16_t*>(fused_.data());
      packBucketAsFloat16(bucket, *context_.gradients, wire);
      timing.packSeconds = secondsSince(start);
      start = Clock::now();
      comm.allreduce(wire, wire, bucket.count, DataType::kFloat16, context_.op);
      timing.exchangeSeconds = secondsSince(start);
      start = Clock::now();
      unpackBucketFromFloat16(bucket, *context_.gradients, wire);
      timing.unpackSeconds = secondsSince(start);
    } else {
      // Every rank agreed on the gradients at construction: a scattered call re-checks nothing per
      // bucket.
      Communicator::Impl& core = CoreAccess::of(comm);
      Call call{CollectiveKind::kAllreduce, nullptr, nullptr, bucket.count, bucket.type, context_.op};
      call.scattered = spans_[index].get();
      core.run(call);
      const bool inPlace = core.lastScatteredInPlace();
      timing.path = contiguous_[index] != nullptr ? "in place" : inPlace ? "scattered" : "packed";
      timing.exchangeSeconds = secondsSince(start);
    }
  }

 private:
  // Bucket `b`'s spans over where its gradients lie now: one span when they lie back to back in
  // member order (all-reduced in place), otherwise one per member.
  void bindSpans(std::size_t b) {
    const Bucket& bucket = (*context_.buckets)[b];
    const std::vector<GradientSpec>& gradients = *context_.gradients;
    contiguous_[b] = spanOf(bucket, gradients);
    std::vector<Span> spans;
    if (contiguous_[b] != nullptr) {
      spans.push_back({contiguous_[b], bucket.count});
    } else {
      for (const BucketMember& member : bucket.members)
        spans.push_back({gradients[member.gradient].data, member.count});
    }
    spans_[b] = std::make_unique<ScatteredBuffer>(spans, dataTypeSize(bucket.type));
  }

  RunnerContext context_;
  std::vector<std::size_t> bucketOf_;
  std::vector<char> moved_;        // per bucket: a member moved since its spans were bound
  std::vector<void*> contiguous_;  // per bucket: where its members start when back to back, or nullptr
  std::vector<std::unique_ptr<ScatteredBuffer>> spans_;  // per host bucket not sent as fp16
  ScratchBuffer fused_;                                  // fp16 buckets' wire buffer
};

}  // namespace

void BucketRunner::gather(std::size_t, Communicator&, BucketTiming&) {
  throw Error(ErrorCode::kInternal, "GradientAverager: a replicated averager gathers no parameters");
}

std::unique_ptr<BucketRunner> makeHostRunner(const RunnerContext& context) {
  if (context.shards != nullptr) return makeShardedHostRunner(context);
  return std::make_unique<HostRunner>(context);
}

}  // namespace ringsync::detail
