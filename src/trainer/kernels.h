// ringsync-train's element-wise CUDA kernels (the matrix products go to cuBLAS); the trainer's
// own, not libringsync's. Leaves: each takes a stream, never synchronises and knows nothing of MPI.
// A failed launch raises BackendError naming the kernel. Row-major float32, like the CPU engine.
#pragma once

#include <cstddef>
#include <cstdint>

struct CUstream_st;

namespace ringsync::trainer::kernels {

// y[r][c] = y[r][c] + bias[c], then max(., 0) when `relu`; y is rows x cols.
void addBiasActivation(float* y, const float* bias, std::size_t rows, std::size_t cols, bool relu, CUstream_st* stream);

// dx[i] = 0 where activation[i] <= 0 (ReLU's derivative; `activation` is ReLU's output).
void reluBackward(float* dx, const float* activation, std::size_t count, CUstream_st* stream);

// Per row of logits (rows x classes, classes <= 256): rowLoss = cross-entropy, rowCorrect = 1 when
// the arg-max (first on ties) is the label; with dLogits, dLogits = scale (softmax - onehot).
void softmaxCrossEntropy(const float* logits, const std::int32_t* labels, std::size_t rows, std::size_t classes,
                         float scale, float* dLogits, float* rowLoss, std::int32_t* rowCorrect, CUstream_st* stream);

// SGD with momentum and weight decay (PyTorch's): v = momentum v + (g + weightDecay w); w -= lr v.
void sgdMomentum(float* parameters, float* velocity, const float* gradients, std::size_t count, float learningRate,
                 float momentum, float weightDecay, CUstream_st* stream);

}  // namespace ringsync::trainer::kernels
