// The GPU engine: cuBLAS's sgemm/sgemv for the products, the trainer's kernels (kernels.h) for the
// rest, all on one non-blocking stream. cuBLAS is column-major: a row-major r x c matrix is its
// transpose, so y = x W (row-major) is computed as y^T = W^T x^T, and likewise for the two backward
// products. test_trainer_gpu (label gpu) checks it against the CPU engine on a machine with a GPU.
#include "gpu_compute.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "gpu_resources.h"
#include "kernels.h"

namespace ringsync::trainer {

namespace {

int asInt(std::size_t value) { return static_cast<int>(value); }  // widths and rows are far below 2^31
constexpr float kOne = 1.0f, kZero = 0.0f;

class GpuEngine final : public ComputeEngine {
 public:
  GpuEngine(const ModelLayout& layout, std::size_t maxRows, int device)
      : layout_(layout),
        maxRows_(std::max<std::size_t>(maxRows, 1)),
        device_(device),
        onDevice_(selectDevice(device)),
        blas_(stream_.get()),
        owned_(wholeModel(layout)),
        parameters_(layout.parameterCount()),
        momentum_(layout.parameterCount()),
        gradients_(layout.parameterCount()),
        x_(maxRows_ * layout.inputWidth()),
        labels_(maxRows_),
        deltaA_(maxRows_ * layout.widestLayer()),
        deltaB_(maxRows_ * layout.widestLayer()),
        ones_(maxRows_),
        rowLoss_(maxRows_),
        rowCorrect_(maxRows_),
        hostLoss_(maxRows_),
        hostCorrect_(maxRows_) {
    for (std::size_t l = 0; l < layout_.layerCount(); ++l) activations_.emplace_back(maxRows_ * layout_.outputs(l));
    const std::vector<float> ones(maxRows_, 1.0f);
    RINGSYNC_TRAINER_CHECK_CUDA(cudaMemcpy(ones_.get(), ones.data(), maxRows_ * sizeof(float), cudaMemcpyHostToDevice));
    cudaDeviceProp properties{};
    RINGSYNC_TRAINER_CHECK_CUDA(cudaGetDeviceProperties(&properties, device_));
    name_ = properties.name;
  }

  std::string describe() const override { return "gpu " + std::to_string(device_) + " (" + name_ + ", cuBLAS)"; }
  bool deviceMemory() const override { return true; }
  CUstream_st* stream() const override { return stream_.get(); }

  void setOwnership(const Ownership& owned) override {
    stream_.synchronize();
    owned_ = owned;
    momentum_ = gpu::DeviceArray<float>(stateCount(owned_));  // only this rank's share of the state
  }
  const Ownership& ownership() const override { return owned_; }

  void setState(const float* parameters, const float* momentum) override {
    stream_.synchronize();
    const std::size_t bytes = layout_.parameterCount() * sizeof(float);
    RINGSYNC_TRAINER_CHECK_CUDA(cudaMemcpy(parameters_.get(), parameters, bytes, cudaMemcpyHostToDevice));
    if (momentum_.count() > 0)
      RINGSYNC_TRAINER_CHECK_CUDA(
          cudaMemcpy(momentum_.get(), momentum, momentum_.count() * sizeof(float), cudaMemcpyHostToDevice));
  }
  void getState(float* parameters, float* momentum) const override {
    stream_.synchronize();
    const std::size_t bytes = layout_.parameterCount() * sizeof(float);
    RINGSYNC_TRAINER_CHECK_CUDA(cudaMemcpy(parameters, parameters_.get(), bytes, cudaMemcpyDeviceToHost));
    if (momentum && momentum_.count() > 0)
      RINGSYNC_TRAINER_CHECK_CUDA(
          cudaMemcpy(momentum, momentum_.get(), momentum_.count() * sizeof(float), cudaMemcpyDeviceToHost));
  }
  float* gradients() override { return gradients_.get(); }
  float* parameters() override { return parameters_.get(); }

  BatchStats trainBatch(const float* x, const std::int32_t* y, std::size_t rows, float scale,
                        const std::function<void(std::size_t)>& ready,
                        const std::function<void(std::size_t)>& needed) override {
    if (rows == 0) {  // no share of a short batch: contribute zeros
      RINGSYNC_TRAINER_CHECK_CUDA(
          cudaMemsetAsync(gradients_.get(), 0, layout_.parameterCount() * sizeof(float), stream_.get()));
      for (std::size_t t = layout_.tensorCount(); t-- > 0;) ready(t);
      return {};
    }
    upload(x, y, rows);
    const float* logits = forward(rows, needed);
    kernels::softmaxCrossEntropy(logits, labels_.get(), rows, layout_.classes(), scale, deltaA_.get(), rowLoss_.get(),
                                 rowCorrect_.get(), stream_.get());
    backward(rows, ready);
    return downloadStats(rows);
  }

  BatchStats evaluate(const float* x, const std::int32_t* y, std::size_t rows) override {
    BatchStats total;
    for (std::size_t first = 0; first < rows; first += maxRows_) {
      const std::size_t slice = std::min(maxRows_, rows - first);
      upload(x + first * layout_.inputWidth(), y + first, slice);
      const float* logits = forward(slice, {});
      kernels::softmaxCrossEntropy(logits, labels_.get(), slice, layout_.classes(), 0.0f, nullptr, rowLoss_.get(),
                                   rowCorrect_.get(), stream_.get());
      const BatchStats stats = downloadStats(slice);
      total.lossSum += stats.lossSum;
      total.correct += stats.correct;
    }
    return total;
  }

  // Slices that follow each other in the flat vector go in one launch (the whole model in one when
  // replicated); updated(t) follows the launch that covers tensor t.
  void applySgd(const SgdSettings& sgd, float learningRate, const std::function<void(std::size_t)>& updated) override {
    std::size_t state = 0, first = 0;  // the run of tensors [first, t] not launched yet
    for (std::size_t t = 0; t < owned_.size(); ++t) {
      const bool last = t + 1 == owned_.size();
      if (!last && layout_.tensor(t).offset + owned_[t].end == layout_.tensor(t + 1).offset + owned_[t + 1].begin)
        continue;
      const std::size_t at = layout_.tensor(first).offset + owned_[first].begin;
      const std::size_t count = layout_.tensor(t).offset + owned_[t].end - at;
      if (count > 0)
        kernels::sgdMomentum(parameters_.get() + at, momentum_.get() + state, gradients_.get() + at, count,
                             learningRate, sgd.momentum, sgd.weightDecay, stream_.get());
      state += count;
      for (; first <= t; ++first) updated(first);
    }
  }

  std::size_t maxRows() const override { return maxRows_; }
  const ModelLayout& layout() const override { return layout_; }

 private:
  static int selectDevice(int device) {
    RINGSYNC_TRAINER_CHECK_CUDA(cudaSetDevice(device));
    return device;
  }

  void upload(const float* x, const std::int32_t* y, std::size_t rows) {
    RINGSYNC_TRAINER_CHECK_CUDA(cudaMemcpyAsync(x_.get(), x, rows * layout_.inputWidth() * sizeof(float),
                                                cudaMemcpyHostToDevice, stream_.get()));
    RINGSYNC_TRAINER_CHECK_CUDA(
        cudaMemcpyAsync(labels_.get(), y, rows * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_.get()));
  }

  // needed(t) (when given) before a layer's work that reads tensor t is enqueued: a sharded run
  // makes the stream wait there for the tensor's gather.
  const float* forward(std::size_t rows, const std::function<void(std::size_t)>& needed) {
    const float* input = x_.get();
    for (std::size_t l = 0; l < layout_.layerCount(); ++l) {
      if (needed) {
        needed(ModelLayout::weightTensor(l));
        needed(ModelLayout::biasTensor(l));
      }
      const int in = asInt(layout_.inputs(l)), out = asInt(layout_.outputs(l));
      float* output = activations_[l].get();
      RINGSYNC_TRAINER_CHECK_CUBLAS(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_N, out, asInt(rows), in, &kOne,
                                                weights(l), out, input, in, &kZero, output, out));
      kernels::addBiasActivation(output, parameters_.get() + layout_.bias(l).offset, rows, layout_.outputs(l),
                                 l + 1 < layout_.layerCount(), stream_.get());
      input = output;
    }
    return activations_.back().get();
  }

  // deltaA_ holds d(loss)/d(logits). Each gradient is handed to `ready` once its product is
  // enqueued: the averager's stream waits on an event recorded on ours.
  void backward(std::size_t rows, const std::function<void(std::size_t)>& ready) {
    float* delta = deltaA_.get();
    float* below = deltaB_.get();
    for (std::size_t l = layout_.layerCount(); l-- > 0;) {
      const int in = asInt(layout_.inputs(l)), out = asInt(layout_.outputs(l)), n = asInt(rows);
      const float* input = l == 0 ? x_.get() : activations_[l - 1].get();
      RINGSYNC_TRAINER_CHECK_CUBLAS(cublasSgemv(blas_.get(), CUBLAS_OP_N, out, n, &kOne, delta, out, ones_.get(), 1,
                                                &kZero, gradients_.get() + layout_.bias(l).offset, 1));
      ready(ModelLayout::biasTensor(l));
      RINGSYNC_TRAINER_CHECK_CUBLAS(cublasSgemm(blas_.get(), CUBLAS_OP_N, CUBLAS_OP_T, out, in, n, &kOne, delta, out,
                                                input, in, &kZero, gradients_.get() + layout_.weights(l).offset, out));
      ready(ModelLayout::weightTensor(l));
      if (l == 0) break;
      RINGSYNC_TRAINER_CHECK_CUBLAS(cublasSgemm(blas_.get(), CUBLAS_OP_T, CUBLAS_OP_N, in, n, out, &kOne, weights(l),
                                                out, delta, out, &kZero, below, in));
      kernels::reluBackward(below, input, rows * layout_.inputs(l), stream_.get());
      std::swap(delta, below);
    }
  }

  BatchStats downloadStats(std::size_t rows) {
    RINGSYNC_TRAINER_CHECK_CUDA(
        cudaMemcpyAsync(hostLoss_.data(), rowLoss_.get(), rows * sizeof(float), cudaMemcpyDeviceToHost, stream_.get()));
    RINGSYNC_TRAINER_CHECK_CUDA(cudaMemcpyAsync(hostCorrect_.data(), rowCorrect_.get(), rows * sizeof(std::int32_t),
                                                cudaMemcpyDeviceToHost, stream_.get()));
    stream_.synchronize();
    BatchStats stats;
    for (std::size_t r = 0; r < rows; ++r) {
      stats.lossSum += hostLoss_[r];
      stats.correct += static_cast<std::size_t>(hostCorrect_[r]);
    }
    return stats;
  }

  const float* weights(std::size_t layer) const { return parameters_.get() + layout_.weights(layer).offset; }

  ModelLayout layout_;
  std::size_t maxRows_;
  int device_;
  int onDevice_;  // set before any member that allocates on the device
  gpu::Stream stream_;
  gpu::CublasHandle blas_;
  Ownership owned_;
  gpu::DeviceArray<float> parameters_, momentum_, gradients_, x_;  // momentum_: the owned slices
  gpu::DeviceArray<std::int32_t> labels_;
  std::vector<gpu::DeviceArray<float>> activations_;
  gpu::DeviceArray<float> deltaA_, deltaB_, ones_, rowLoss_;
  gpu::DeviceArray<std::int32_t> rowCorrect_;
  std::vector<float> hostLoss_;
  std::vector<std::int32_t> hostCorrect_;
  std::string name_;
};

}  // namespace

GpuHooks gpuHooks() {
  GpuHooks hooks;
  hooks.makeEngine = [](const ModelLayout& layout, std::size_t maxRows, int device) -> std::unique_ptr<ComputeEngine> {
    return std::make_unique<GpuEngine>(layout, maxRows, device);
  };
  return hooks;
}

}  // namespace ringsync::trainer
