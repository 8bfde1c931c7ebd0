// The MLP's shape and where each tensor lives in one flat float32 vector (parameters, gradients
// and momentum all use this layout). Layer l maps inputs(l) to outputs(l) with a weight matrix
// W_l (inputs x outputs, row-major, so y = x W + b for a row x) and a bias b_l; ReLU follows every
// layer but the last, whose outputs are the logits of a softmax cross-entropy.
// Tensors are numbered in forward order, W_0, b_0, W_1, b_1, ...: the GradientAverager's
// registration order. Backward produces them in reverse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringsync::trainer {

struct TensorSlice {
  std::size_t offset = 0;  // elements from the start of the flat vector
  std::size_t count = 0;
};

class ModelLayout {
 public:
  // widths = {inputs, hidden..., classes}; at least two, all positive (else ConfigError).
  explicit ModelLayout(std::vector<std::size_t> widths);

  std::size_t layerCount() const { return widths_.size() - 1; }
  std::size_t inputs(std::size_t layer) const { return widths_[layer]; }
  std::size_t outputs(std::size_t layer) const { return widths_[layer + 1]; }
  std::size_t inputWidth() const { return widths_.front(); }
  std::size_t classes() const { return widths_.back(); }
  std::size_t widestLayer() const;  // the largest width, for activation buffers

  std::size_t tensorCount() const { return 2 * layerCount(); }
  static std::size_t weightTensor(std::size_t layer) { return 2 * layer; }
  static std::size_t biasTensor(std::size_t layer) { return 2 * layer + 1; }
  TensorSlice tensor(std::size_t index) const { return tensors_[index]; }
  TensorSlice weights(std::size_t layer) const { return tensors_[weightTensor(layer)]; }
  TensorSlice bias(std::size_t layer) const { return tensors_[biasTensor(layer)]; }
  std::size_t parameterCount() const { return parameterCount_; }

  const std::vector<std::size_t>& widths() const { return widths_; }
  std::string describe() const;  // "784-256-128-10"

 private:
  std::vector<std::size_t> widths_;
  std::vector<TensorSlice> tensors_;
  std::size_t parameterCount_ = 0;
};

// "784-256-128-10" for any list of widths (valid or not, e.g. one read from a checkpoint).
std::string describeWidths(const std::vector<std::size_t>& widths);

// He-normal weights (standard deviation sqrt(2 / inputs), suited to ReLU) and zero biases, drawn
// from `seed` with the portable Rng, so a seed means the same model everywhere.
std::vector<float> initialParameters(const ModelLayout& layout, std::uint64_t seed);

}  // namespace ringsync::trainer
