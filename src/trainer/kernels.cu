#include "kernels.h"

#include <algorithm>
#include <string>

#include <cuda_runtime.h>

#include "ringsync/errors.h"

namespace ringsync::trainer::kernels {

namespace {

constexpr unsigned kThreads = 256;
constexpr std::size_t kMaxBlocks = 65535;

// Grid-stride loops: any count fits in at most kMaxBlocks blocks.
unsigned blocksFor(std::size_t count) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min(kMaxBlocks, (count + kThreads - 1) / kThreads)));
}

// A launch error (bad configuration, no device) is reported at once; errors inside the kernel
// surface at the caller's next synchronisation.
void checkLaunch(const char* kernel) {
  const cudaError_t code = cudaGetLastError();
  if (code != cudaSuccess) {
    throw BackendError(std::string("launching ") + kernel + " failed: " + cudaGetErrorName(code) + ": " +
                       cudaGetErrorString(code));
  }
}

__global__ void addBiasActivationKernel(float* y, const float* bias, std::size_t rows, std::size_t cols, bool relu) {
  const std::size_t total = rows * cols;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < total;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float value = y[i] + bias[i % cols];
    y[i] = relu ? fmaxf(value, 0.0f) : value;
  }
}

__global__ void reluBackwardKernel(float* dx, const float* activation, std::size_t count) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    if (activation[i] <= 0.0f) dx[i] = 0.0f;
  }
}

// One thread per row: the class counts of a classifier head are small.
__global__ void softmaxCrossEntropyKernel(const float* logits, const std::int32_t* labels, std::size_t rows,
                                          std::size_t classes, float scale, float* dLogits, float* rowLoss,
                                          std::int32_t* rowCorrect) {
  for (std::size_t r = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; r < rows;
       r += std::size_t{gridDim.x} * blockDim.x) {
    const float* z = logits + r * classes;
    std::size_t best = 0;
    for (std::size_t c = 1; c < classes; ++c) best = z[c] > z[best] ? c : best;
    const float top = z[best];
    double sum = 0;
    for (std::size_t c = 0; c < classes; ++c) sum += exp(static_cast<double>(z[c] - top));
    const double logSum = log(sum) + top;
    const std::size_t label = static_cast<std::size_t>(labels[r]);
    rowLoss[r] = static_cast<float>(logSum - z[label]);
    rowCorrect[r] = best == label ? 1 : 0;
    if (dLogits == nullptr) continue;
    for (std::size_t c = 0; c < classes; ++c) {
      const double p = exp(static_cast<double>(z[c]) - logSum);
      dLogits[r * classes + c] = static_cast<float>(scale * (p - (c == label ? 1.0 : 0.0)));
    }
  }
}

__global__ void sgdMomentumKernel(float* w, float* v, const float* g, std::size_t count, float lr, float momentum,
                                  float decay) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const float gradient = g[i] + decay * w[i];
    v[i] = momentum * v[i] + gradient;
    w[i] -= lr * v[i];
  }
}

}  // namespace

void addBiasActivation(float* y, const float* bias, std::size_t rows, std::size_t cols, bool relu,
                       CUstream_st* stream) {
  if (rows * cols == 0) return;
  addBiasActivationKernel<<<blocksFor(rows * cols), kThreads, 0, stream>>>(y, bias, rows, cols, relu);
  checkLaunch("addBiasActivationKernel");
}

void reluBackward(float* dx, const float* activation, std::size_t count, CUstream_st* stream) {
  if (count == 0) return;
  reluBackwardKernel<<<blocksFor(count), kThreads, 0, stream>>>(dx, activation, count);
  checkLaunch("reluBackwardKernel");
}

void softmaxCrossEntropy(const float* logits, const std::int32_t* labels, std::size_t rows, std::size_t classes,
                         float scale, float* dLogits, float* rowLoss, std::int32_t* rowCorrect, CUstream_st* stream) {
  if (rows == 0) return;
  softmaxCrossEntropyKernel<<<blocksFor(rows), kThreads, 0, stream>>>(logits, labels, rows, classes, scale, dLogits,
                                                                      rowLoss, rowCorrect);
  checkLaunch("softmaxCrossEntropyKernel");
}

void sgdMomentum(float* parameters, float* velocity, const float* gradients, std::size_t count, float learningRate,
                 float momentum, float weightDecay, CUstream_st* stream) {
  if (count == 0) return;
  sgdMomentumKernel<<<blocksFor(count), kThreads, 0, stream>>>(parameters, velocity, gradients, count, learningRate,
                                                               momentum, weightDecay);
  checkLaunch("sgdMomentumKernel");
}

}  // namespace ringsync::trainer::kernels
