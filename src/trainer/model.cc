#include "model.h"

#include <algorithm>
#include <cmath>

#include "errors.h"
#include "random.h"

namespace ringsync::trainer {

ModelLayout::ModelLayout(std::vector<std::size_t> widths) : widths_(std::move(widths)) {
  if (widths_.size() < 2) throw ConfigError("model: needs at least an input and an output width");
  for (std::size_t width : widths_) {
    if (width == 0) throw ConfigError("model: every layer width must be positive (got " + describe() + ")");
  }
  for (std::size_t layer = 0; layer < layerCount(); ++layer) {
    tensors_.push_back({parameterCount_, inputs(layer) * outputs(layer)});
    parameterCount_ += inputs(layer) * outputs(layer);
    tensors_.push_back({parameterCount_, outputs(layer)});
    parameterCount_ += outputs(layer);
  }
}

std::size_t ModelLayout::widestLayer() const { return *std::max_element(widths_.begin(), widths_.end()); }

std::string ModelLayout::describe() const { return describeWidths(widths_); }

std::string describeWidths(const std::vector<std::size_t>& widths) {
  std::string text;
  for (std::size_t i = 0; i < widths.size(); ++i) text += (i ? "-" : "") + std::to_string(widths[i]);
  return text;
}

std::vector<float> initialParameters(const ModelLayout& layout, std::uint64_t seed) {
  std::vector<float> parameters(layout.parameterCount(), 0.0f);
  Rng rng(seed, 0);
  for (std::size_t layer = 0; layer < layout.layerCount(); ++layer) {
    const double deviation = std::sqrt(2.0 / static_cast<double>(layout.inputs(layer)));
    const TensorSlice w = layout.weights(layer);
    for (std::size_t i = 0; i < w.count; ++i) parameters[w.offset + i] = static_cast<float>(deviation * rng.normal());
  }
  return parameters;
}

}  // namespace ringsync::trainer
