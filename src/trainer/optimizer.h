// SGD with momentum and weight decay on host arrays, PyTorch's formulation:
//   v = momentum v + (g + weightDecay w);  w -= lr v
// Every rank applies it to the same averaged gradient, so the replicas stay bit-identical.
#pragma once

#include <cstddef>

#include "config.h"

namespace ringsync::trainer {

void sgdMomentumStep(float* parameters, float* velocity, const float* gradients, std::size_t count,
                     const SgdSettings& sgd, float learningRate);

}  // namespace ringsync::trainer
