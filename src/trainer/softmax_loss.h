// Softmax cross-entropy on the host: the loss of each row of logits, whether its arg-max is the
// label, and the gradient of scale x (summed loss) with respect to the logits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute.h"

namespace ringsync::trainer {

// logits: rows x classes. When dLogits is not null it receives scale x (softmax - onehot(label)).
BatchStats softmaxCrossEntropy(const float* logits, const std::int32_t* labels, std::size_t rows, std::size_t classes,
                               float scale, float* dLogits);

}  // namespace ringsync::trainer
