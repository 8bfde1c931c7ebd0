#include "compute.h"

#include "ringsync/errors.h"

namespace ringsync::trainer {

Ownership wholeModel(const ModelLayout& layout) {
  Ownership owned;
  for (std::size_t t = 0; t < layout.tensorCount(); ++t) owned.push_back({0, layout.tensor(t).count});
  return owned;
}

std::size_t stateCount(const Ownership& owned) {
  std::size_t total = 0;
  for (const OwnedSlice& slice : owned) total += slice.count();
  return total;
}

std::unique_ptr<ComputeEngine> makeComputeEngine(Device device, const ModelLayout& layout, std::size_t maxRows,
                                                 int threads, int cudaDevice, const GpuHooks* gpu) {
  if (device == Device::kCpu) return makeCpuEngine(layout, maxRows, threads);
  if (gpu == nullptr || cudaDevice < 0) {
    if (device == Device::kAuto) return makeCpuEngine(layout, maxRows, threads);
    throw BackendError(gpu ? "--device gpu: no usable CUDA device for this rank (none visible, or "
                             "RINGSYNC_CUDA_DEVICE names one that is not)"
                           : "--device gpu: ringsync-train was built without CUDA");
  }
  return gpu->makeEngine(layout, maxRows, cudaDevice);
}

}  // namespace ringsync::trainer
