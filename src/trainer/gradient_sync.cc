#include "src/trainer/gradient_sync.h"

#include <vector>

#include "ringsync/gradient_averager.h"

namespace ringsync::trainer {

namespace {

class AveragerSync final : public GradientSync {
 public:
  AveragerSync(const Communicator& comm, std::vector<GradientBuffer> buffers, const GradientAveragerOptions& options)
      : averager_(comm, std::move(buffers), options) {}

  void markReady(std::size_t tensor) override { averager_.markReady(tensor); }
  void synchronize() override { averager_.synchronize(); }
  std::string describe() const override {
    return "GradientAverager (sum of 1/B-scaled gradients, " + std::to_string(averager_.bucketCount()) + " bucket" +
           (averager_.bucketCount() == 1 ? "" : "s") + ", " + (averager_.overlapping() ? "overlapped" : "not overlapped") +
           ")";
  }

 private:
  GradientAverager averager_;
};

}  // namespace

std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               bool overlap) {
  std::vector<GradientBuffer> buffers;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t) {
    buffers.push_back({gradients + layout.tensor(t).offset, layout.tensor(t).count, DataType::kFloat32});
  }
  GradientAveragerOptions options;
  options.op = ReduceOp::kSum;
  options.overlap = overlap;
  return std::make_unique<AveragerSync>(comm, std::move(buffers), options);
}

}  // namespace ringsync::trainer
