// The CPU engine: the three matrix products per layer go to OpenBLAS's sgemm (one thread per rank
// by default: ranks already fill the cores), the element-wise work is plain loops.
#include <algorithm>
#include <cstring>
#include <vector>

#include <cblas.h>

#include "compute.h"
#include "optimizer.h"
#include "softmax_loss.h"

namespace ringsync::trainer {

namespace {

int asBlasInt(std::size_t value) { return static_cast<int>(value); }  // widths and rows are far below 2^31

class CpuEngine final : public ComputeEngine {
 public:
  CpuEngine(const ModelLayout& layout, std::size_t maxRows, int threads)
      : layout_(layout),
        maxRows_(std::max<std::size_t>(maxRows, 1)),
        threads_(threads),
        owned_(wholeModel(layout)),
        parameters_(layout.parameterCount()),
        momentum_(layout.parameterCount()),
        gradients_(layout.parameterCount()),
        activations_(layout.layerCount()),
        deltaA_(maxRows_ * layout.widestLayer()),
        deltaB_(maxRows_ * layout.widestLayer()),
        ones_(maxRows_, 1.0f) {
    openblas_set_num_threads(threads_);
    for (std::size_t l = 0; l < layout_.layerCount(); ++l) activations_[l].resize(maxRows_ * layout_.outputs(l));
  }

  std::string describe() const override {
    return "cpu (" + std::string(openblas_get_config()) + ", " + std::to_string(threads_) + " thread" +
           (threads_ == 1 ? "" : "s") + " per rank)";
  }
  bool deviceMemory() const override { return false; }

  void setOwnership(const Ownership& owned) override {
    owned_ = owned;
    momentum_.assign(stateCount(owned_), 0.0f);
    momentum_.shrink_to_fit();  // the point of sharding: only this rank's share of the state
  }
  const Ownership& ownership() const override { return owned_; }

  void setState(const float* parameters, const float* momentum) override {
    std::copy(parameters, parameters + parameters_.size(), parameters_.begin());
    std::copy(momentum, momentum + momentum_.size(), momentum_.begin());
  }
  void getState(float* parameters, float* momentum) const override {
    std::copy(parameters_.begin(), parameters_.end(), parameters);
    if (momentum) std::copy(momentum_.begin(), momentum_.end(), momentum);
  }
  float* gradients() override { return gradients_.data(); }
  float* parameters() override { return parameters_.data(); }

  BatchStats trainBatch(const float* x, const std::int32_t* y, std::size_t rows, float scale,
                        const std::function<void(std::size_t)>& ready,
                        const std::function<void(std::size_t)>& needed) override {
    if (rows == 0) {  // this rank holds no share of a short batch: it contributes zeros
      std::fill(gradients_.begin(), gradients_.end(), 0.0f);
      for (std::size_t t = layout_.tensorCount(); t-- > 0;) ready(t);
      return {};
    }
    const float* logits = forward(x, rows, needed);
    const BatchStats stats = softmaxCrossEntropy(logits, y, rows, layout_.classes(), scale, deltaA_.data());
    backward(x, rows, ready);
    return stats;
  }

  BatchStats evaluate(const float* x, const std::int32_t* y, std::size_t rows) override {
    BatchStats total;
    for (std::size_t first = 0; first < rows; first += maxRows_) {
      const std::size_t slice = std::min(maxRows_, rows - first);
      const float* logits = forward(x + first * layout_.inputWidth(), slice, {});
      const BatchStats stats = softmaxCrossEntropy(logits, y + first, slice, layout_.classes(), 0.0f, nullptr);
      total.lossSum += stats.lossSum;
      total.correct += stats.correct;
    }
    return total;
  }

  void applySgd(const SgdSettings& sgd, float learningRate, const std::function<void(std::size_t)>& updated) override {
    float* velocity = momentum_.data();
    for (std::size_t t = 0; t < owned_.size(); ++t) {
      const std::size_t at = layout_.tensor(t).offset + owned_[t].begin;
      sgdMomentumStep(parameters_.data() + at, velocity, gradients_.data() + at, owned_[t].count(), sgd, learningRate);
      velocity += owned_[t].count();
      updated(t);
    }
  }

  std::size_t maxRows() const override { return maxRows_; }
  const ModelLayout& layout() const override { return layout_; }

 private:
  // Returns the logits (rows x classes); keeps every layer's output for backward. Calls needed(t)
  // (when given) before a layer first reads tensor t.
  const float* forward(const float* x, std::size_t rows, const std::function<void(std::size_t)>& needed) {
    const float* input = x;
    for (std::size_t l = 0; l < layout_.layerCount(); ++l) {
      if (needed) {
        needed(ModelLayout::weightTensor(l));
        needed(ModelLayout::biasTensor(l));
      }
      const std::size_t in = layout_.inputs(l), out = layout_.outputs(l);
      float* output = activations_[l].data();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, asBlasInt(rows), asBlasInt(out), asBlasInt(in), 1.0f,
                  input, asBlasInt(in), parameters_.data() + layout_.weights(l).offset, asBlasInt(out), 0.0f, output,
                  asBlasInt(out));
      const float* bias = parameters_.data() + layout_.bias(l).offset;
      const bool relu = l + 1 < layout_.layerCount();
      for (std::size_t r = 0; r < rows; ++r) {
        float* row = output + r * out;
        for (std::size_t c = 0; c < out; ++c) {
          const float value = row[c] + bias[c];
          row[c] = relu ? std::max(value, 0.0f) : value;
        }
      }
      input = output;
    }
    return activations_.back().data();
  }

  // deltaA_ holds d(loss)/d(logits) on entry. Per layer, last first: bias and weight gradients
  // (each handed to `ready` at once), then the delta of the layer below through W^T and ReLU.
  void backward(const float* x, std::size_t rows, const std::function<void(std::size_t)>& ready) {
    float* delta = deltaA_.data();
    float* below = deltaB_.data();
    for (std::size_t l = layout_.layerCount(); l-- > 0;) {
      const std::size_t in = layout_.inputs(l), out = layout_.outputs(l);
      const float* input = l == 0 ? x : activations_[l - 1].data();
      cblas_sgemv(CblasRowMajor, CblasTrans, asBlasInt(rows), asBlasInt(out), 1.0f, delta, asBlasInt(out), ones_.data(),
                  1, 0.0f, gradients_.data() + layout_.bias(l).offset, 1);
      ready(ModelLayout::biasTensor(l));
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, asBlasInt(in), asBlasInt(out), asBlasInt(rows), 1.0f, input,
                  asBlasInt(in), delta, asBlasInt(out), 0.0f, gradients_.data() + layout_.weights(l).offset,
                  asBlasInt(out));
      ready(ModelLayout::weightTensor(l));
      if (l == 0) break;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, asBlasInt(rows), asBlasInt(in), asBlasInt(out), 1.0f, delta,
                  asBlasInt(out), parameters_.data() + layout_.weights(l).offset, asBlasInt(out), 0.0f, below,
                  asBlasInt(in));
      for (std::size_t i = 0; i < rows * in; ++i) {
        if (input[i] <= 0.0f) below[i] = 0.0f;  // ReLU passes gradient only where it was active
      }
      std::swap(delta, below);
    }
  }

  ModelLayout layout_;
  std::size_t maxRows_;
  int threads_;
  Ownership owned_;
  std::vector<float> parameters_, momentum_, gradients_;  // momentum_: the owned slices, back to back
  std::vector<std::vector<float>> activations_;           // activations_[l]: output of layer l (after ReLU)
  std::vector<float> deltaA_, deltaB_;                    // rows x widest: the delta flowing down
  std::vector<float> ones_;                               // sums a delta's rows into a bias gradient
};

}  // namespace

std::unique_ptr<ComputeEngine> makeCpuEngine(const ModelLayout& layout, std::size_t maxRows, int threads) {
  return std::make_unique<CpuEngine>(layout, maxRows, threads);
}

}  // namespace ringsync::trainer
