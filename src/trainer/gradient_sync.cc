#include "gradient_sync.h"

#include <vector>

namespace ringsync::trainer {

std::unique_ptr<GradientAverager> makeGradientAverager(const Communicator& comm, const ModelLayout& layout,
                                                       float* gradients, bool overlap) {
  std::vector<GradientBuffer> buffers;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t) {
    buffers.push_back({gradients + layout.tensor(t).offset, layout.tensor(t).count, DataType::kFloat32});
  }
  GradientAveragerOptions options;
  options.op = ReduceOp::kSum;
  options.overlap = overlap;
  return std::make_unique<GradientAverager>(comm, std::move(buffers), options);
}

std::string describeGradientSync(const GradientAverager& averager) {
  return "GradientAverager (sum of 1/B-scaled gradients, " + std::to_string(averager.bucketCount()) + " bucket" +
         (averager.bucketCount() == 1 ? "" : "s") + ", " + (averager.overlapping() ? "overlapped" : "not overlapped") +
         ")";
}

}  // namespace ringsync::trainer
