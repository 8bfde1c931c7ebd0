#include "softmax_loss.h"

#include <algorithm>
#include <cmath>

namespace ringsync::trainer {

BatchStats softmaxCrossEntropy(const float* logits, const std::int32_t* labels, std::size_t rows, std::size_t classes,
                               float scale, float* dLogits) {
  BatchStats stats;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* z = logits + r * classes;
    const std::size_t label = static_cast<std::size_t>(labels[r]);
    const std::size_t best = static_cast<std::size_t>(std::max_element(z, z + classes) - z);
    const float top = z[best];
    // log-sum-exp shifted by the maximum: exp() never overflows.
    double sum = 0;
    for (std::size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c] - top));
    const double logSum = std::log(sum) + top;
    stats.lossSum += logSum - z[label];
    stats.correct += best == label ? 1 : 0;
    if (dLogits == nullptr) continue;
    float* d = dLogits + r * classes;
    for (std::size_t c = 0; c < classes; ++c) {
      const double p = std::exp(static_cast<double>(z[c]) - logSum);
      d[c] = static_cast<float>(scale * (p - (c == label ? 1.0 : 0.0)));
    }
  }
  return stats;
}

}  // namespace ringsync::trainer
