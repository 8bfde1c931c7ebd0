#include "gradient_sync.h"

#include <algorithm>
#include <string_view>
#include <vector>

namespace ringsync::trainer {

std::unique_ptr<GradientAverager> makeGradientAverager(const Communicator& comm, const ModelLayout& layout,
                                                       float* gradients, const GradientSyncSettings& settings) {
  std::vector<GradientBuffer> buffers;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t) {
    buffers.push_back({gradients + layout.tensor(t).offset, layout.tensor(t).count, DataType::kFloat32});
  }
  GradientAveragerOptions options;
  options.op = ReduceOp::kSum;
  options.overlap = settings.overlap;
  options.compressFp16 = settings.fp16Wire;
  return std::make_unique<GradientAverager>(comm, std::move(buffers), options);
}

std::string describeGradientSync(const GradientAverager& averager) {
  const std::vector<BucketTiming> buckets = averager.lastStepBuckets();
  const bool fp16Wire = std::any_of(buckets.begin(), buckets.end(),
                                    [](const BucketTiming& b) { return std::string_view(b.path) == "fp16"; });
  return "GradientAverager (sum of 1/B-scaled gradients, " + std::to_string(averager.bucketCount()) + " bucket" +
         (averager.bucketCount() == 1 ? "" : "s") + ", " + (averager.overlapping() ? "overlapped" : "not overlapped") +
         (fp16Wire ? ", float16 on the wire" : "") + ")";
}

}  // namespace ringsync::trainer
