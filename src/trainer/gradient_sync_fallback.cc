// Stand-in used only while libringsync has no GradientAverager implementation yet (the CMake
// file picks this or gradient_sync.cc): one all-reduce of the whole gradient in synchronize(),
// fused but not overlapped.
#include "src/trainer/gradient_sync.h"

namespace ringsync::trainer {

namespace {

class AllreduceSync final : public GradientSync {
 public:
  AllreduceSync(const Communicator& comm, float* gradients, std::size_t count, CUstream_st* stream)
      : comm_(comm.duplicate()), gradients_(gradients), count_(count), stream_(stream) {}

  void markReady(std::size_t) override {}
  // Device gradients: ordered on the engine's stream, so the update enqueued after it sees the sum.
  void synchronize() override {
    if (stream_) {
      comm_.allreduce(gradients_, gradients_, count_, DataType::kFloat32, ReduceOp::kSum, stream_);
    } else {
      comm_.allreduce(gradients_, gradients_, count_, DataType::kFloat32, ReduceOp::kSum);
    }
  }
  std::string describe() const override { return "one fused all-reduce per step (sum of 1/B-scaled gradients)"; }

 private:
  Communicator comm_;
  float* gradients_;
  std::size_t count_;
  CUstream_st* stream_;
};

}  // namespace

std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               bool /*overlap*/, CUstream_st* stream) {
  return std::make_unique<AllreduceSync>(comm, gradients, layout.parameterCount(), stream);
}

}  // namespace ringsync::trainer
