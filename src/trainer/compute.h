// Where the model's arithmetic runs: the CPU engine (OpenBLAS) or the GPU engine (cuBLAS and the
// trainer's kernels). An engine owns the parameters and gradients (flat, in ModelLayout's order)
// and the momentum of the parameters it updates (its Ownership: all of them, or with --shard this
// rank's shard) in its own memory; the trainer moves them to the host only to broadcast, checksum
// or checkpoint them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config.h"
#include "model.h"

struct CUstream_st;  // cudaStream_t, without CUDA's headers

namespace ringsync::trainer {

// The elements of each tensor whose update this rank makes and keeps momentum for: one slice
// [begin, end) per tensor, in layout order (an empty slice when it owns none). Replicated, every
// tensor whole; sharded, the ShardedGradientAverager's shard. The momentum holds the slices back to
// back in this order.
struct OwnedSlice {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t count() const { return end - begin; }
};
using Ownership = std::vector<OwnedSlice>;

Ownership wholeModel(const ModelLayout& layout);
std::size_t stateCount(const Ownership& owned);  // momentum elements: the slices' total

struct BatchStats {
  double lossSum = 0;       // summed (not averaged) cross-entropy over the rows
  std::size_t correct = 0;  // rows whose arg-max logit is the label
};

class ComputeEngine {
 public:
  virtual ~ComputeEngine() = default;

  virtual std::string describe() const = 0;  // "cpu (OpenBLAS, 1 thread)"
  virtual bool deviceMemory() const = 0;     // whether gradients() is a device pointer
  // The stream the engine's work is ordered on (nullptr for the CPU engine): gradients handed to
  // `ready` are final once the work enqueued there so far has run.
  virtual CUstream_st* stream() const { return nullptr; }

  // Which slices this engine updates (default: wholeModel); resizes the momentum to
  // stateCount(owned) (its values are then undefined until setState).
  virtual void setOwnership(const Ownership& owned) = 0;
  virtual const Ownership& ownership() const = 0;

  // Host arrays: layout().parameterCount() parameters, stateCount(ownership()) momentum values;
  // momentum may be nullptr in getState.
  virtual void setState(const float* parameters, const float* momentum) = 0;
  virtual void getState(float* parameters, float* momentum) const = 0;

  // The flat gradient and parameter vectors in the engine's memory (what the averager reduces and,
  // sharded, gathers).
  virtual float* gradients() = 0;
  virtual float* parameters() = 0;

  // Forward and backward over `rows` samples (x: rows x inputs, y: labels, both host memory;
  // rows may be 0). Calls needed(t) before forward first reads tensor t's parameters (a sharded
  // run waits there for their gather; may be empty). Writes `scale` x the gradient of the summed
  // loss into gradients() and calls ready(t) as soon as tensor t's gradient is final, last layer
  // first, so its exchange can start while backward goes on.
  virtual BatchStats trainBatch(const float* x, const std::int32_t* y, std::size_t rows, float scale,
                                const std::function<void(std::size_t)>& ready,
                                const std::function<void(std::size_t)>& needed) = 0;
  // Forward only, any number of rows (processed in slices of at most maxRows()).
  virtual BatchStats evaluate(const float* x, const std::int32_t* y, std::size_t rows) = 0;

  // v = momentum v + (g + weightDecay w); w -= lr v (PyTorch's SGD) on the owned slices, tensor by
  // tensor in layout order, calling updated(t) once tensor t's slice is updated (enqueued, for the
  // GPU engine): for every tensor, also one whose slice is empty.
  virtual void applySgd(const SgdSettings& sgd, float learningRate,
                        const std::function<void(std::size_t)>& updated) = 0;

  virtual std::size_t maxRows() const = 0;
  virtual const ModelLayout& layout() const = 0;
};

// Makes the CPU engine for batches of up to `maxRows` rows, with `threads` OpenBLAS threads.
std::unique_ptr<ComputeEngine> makeCpuEngine(const ModelLayout& layout, std::size_t maxRows, int threads);

// The GPU engine lives in a separate library (cuBLAS costs ~0.3 s at process start, so only the
// ringsync-train binary links it); main() passes these hooks in, tests pass none.
struct GpuHooks {
  std::function<std::unique_ptr<ComputeEngine>(const ModelLayout&, std::size_t maxRows, int device)> makeEngine;
};

// Resolves --device: cpu; gpu (BackendError when there are no hooks or cudaDevice < 0); auto picks
// gpu when both are there, else cpu. `cudaDevice` is the communicator's (Communicator::cudaDevice()),
// so the engine's gradients sit on the GPU the library's device collectives use.
std::unique_ptr<ComputeEngine> makeComputeEngine(Device device, const ModelLayout& layout, std::size_t maxRows,
                                                 int threads, int cudaDevice, const GpuHooks* gpu);

}  // namespace ringsync::trainer
