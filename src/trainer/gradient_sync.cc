#include "gradient_sync.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "ringsync/gradient_averager.h"
#include "ringsync/sharded_averager.h"

namespace ringsync::trainer {
namespace {

std::vector<GradientBuffer> tensorsOf(const ModelLayout& layout, float* flat) {
  std::vector<GradientBuffer> buffers;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t)
    buffers.push_back({flat + layout.tensor(t).offset, layout.tensor(t).count, DataType::kFloat32});
  return buffers;
}

GradientAveragerOptions optionsFor(const GradientSyncSettings& settings) {
  GradientAveragerOptions options;
  options.op = ReduceOp::kSum;
  options.overlap = settings.overlap;
  options.compressFp16 = settings.fp16Wire;
  return options;
}

template <typename Averager> std::string describeAverager(const char* what, const Averager& averager) {
  const std::vector<BucketTiming> buckets = averager.lastStepBuckets();
  const bool fp16Wire = std::any_of(buckets.begin(), buckets.end(),
                                    [](const BucketTiming& b) { return std::string_view(b.path) == "fp16"; });
  return std::string(what) + ", " + std::to_string(averager.bucketCount()) + " bucket" +
         (averager.bucketCount() == 1 ? "" : "s") + ", " + (averager.overlapping() ? "overlapped" : "not overlapped") +
         (fp16Wire ? ", float16 on the wire" : "") + ")";
}

class ReplicatedSync final : public GradientSync {
 public:
  ReplicatedSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                 const GradientSyncSettings& settings)
      : layout_(layout), averager_(comm, tensorsOf(layout, gradients), optionsFor(settings)) {}

  void markReady(std::size_t tensor, CUstream_st* stream) override { averager_.markReady(tensor, stream); }
  void synchronize() override { averager_.synchronize(); }
  bool sharded() const override { return false; }
  Ownership ownership(int) const override { return wholeModel(layout_); }
  std::size_t wireBytesPerStep() const override { return averager_.stats().wireBytesPerStep; }
  std::string describe() const override {
    return describeAverager("GradientAverager (sum of 1/B-scaled gradients", averager_);
  }

 private:
  ModelLayout layout_;
  GradientAverager averager_;
};

class ShardedSync final : public GradientSync {
 public:
  ShardedSync(const Communicator& comm, const ModelLayout& layout, float* gradients, float* parameters,
              const GradientSyncSettings& settings)
      : layout_(layout),
        averager_(comm, tensorsOf(layout, gradients), tensorsOf(layout, parameters), optionsFor(settings)) {}

  void markReady(std::size_t tensor, CUstream_st* stream) override { averager_.markReady(tensor, stream); }
  void synchronize() override { averager_.synchronize(); }
  void markUpdated(std::size_t tensor, CUstream_st* stream) override { averager_.markUpdated(tensor, stream); }
  void waitForParameter(std::size_t tensor, CUstream_st* stream) override {
    averager_.waitForParameter(tensor, stream);
  }
  void gatherParameters() override { averager_.gatherParameters(); }
  bool sharded() const override { return true; }
  Ownership ownership(int rank) const override {
    Ownership owned;
    for (std::size_t t = 0; t < layout_.tensorCount(); ++t) {
      const ShardRange range = averager_.shardOf(rank, t);
      owned.push_back({range.begin, range.end});
    }
    return owned;
  }
  std::size_t wireBytesPerStep() const override { return averager_.stats().wireBytesPerStep; }
  std::string describe() const override {
    return describeAverager(
        "ShardedGradientAverager (reduce-scatter of 1/B-scaled gradients, shard update, "
        "all-gather of the parameters",
        averager_);
  }

 private:
  ModelLayout layout_;
  ShardedGradientAverager averager_;
};

}  // namespace

std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               float* parameters, const GradientSyncSettings& settings) {
  if (settings.shard) return std::make_unique<ShardedSync>(comm, layout, gradients, parameters, settings);
  return std::make_unique<ReplicatedSync>(comm, layout, gradients, settings);
}

}  // namespace ringsync::trainer
