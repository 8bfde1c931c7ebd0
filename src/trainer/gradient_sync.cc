#include "gradient_sync.h"

#include <vector>

#include "ringsync/gradient_averager.h"

namespace ringsync::trainer {

namespace {

class AveragerSync final : public GradientSync {
 public:
  AveragerSync(const Communicator& comm, std::vector<GradientBuffer> buffers, const GradientAveragerOptions& options,
               CUstream_st* stream)
      : averager_(comm, std::move(buffers), options), stream_(stream) {}

  void markReady(std::size_t tensor) override {
    if (stream_) {
      averager_.markReady(tensor, stream_);  // the averager's stream waits for the engine's
    } else {
      averager_.markReady(tensor);
    }
  }
  void synchronize() override { averager_.synchronize(); }
  std::string describe() const override {
    return "GradientAverager (sum of 1/B-scaled gradients, " + std::to_string(averager_.bucketCount()) + " bucket" +
           (averager_.bucketCount() == 1 ? "" : "s") + ", " + (averager_.overlapping() ? "overlapped" : "not overlapped") +
           ")";
  }

 private:
  GradientAverager averager_;
  CUstream_st* stream_;
};

}  // namespace

std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               bool overlap, CUstream_st* stream) {
  std::vector<GradientBuffer> buffers;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t) {
    buffers.push_back({gradients + layout.tensor(t).offset, layout.tensor(t).count, DataType::kFloat32});
  }
  GradientAveragerOptions options;
  options.op = ReduceOp::kSum;
  options.overlap = overlap;
  return std::make_unique<AveragerSync>(comm, std::move(buffers), options, stream);
}

}  // namespace ringsync::trainer
