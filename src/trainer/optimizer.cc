#include "optimizer.h"

namespace ringsync::trainer {

void sgdMomentumStep(float* parameters, float* velocity, const float* gradients, std::size_t count,
                     const SgdSettings& sgd, float learningRate) {
  const float momentum = sgd.momentum;
  const float decay = sgd.weightDecay;
  for (std::size_t i = 0; i < count; ++i) {
    const float g = gradients[i] + decay * parameters[i];
    velocity[i] = momentum * velocity[i] + g;
    parameters[i] -= learningRate * velocity[i];
  }
}

}  // namespace ringsync::trainer
