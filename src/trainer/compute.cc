#include "compute.h"

#include "ringsync/errors.h"

namespace ringsync::trainer {

std::unique_ptr<ComputeEngine> makeComputeEngine(Device device, const ModelLayout& layout, std::size_t maxRows,
                                                 int threads, int gpuIndex, const GpuHooks* gpu) {
  if (device == Device::kCpu) return makeCpuEngine(layout, maxRows, threads);
  const int gpus = gpu && gpu->deviceCount ? gpu->deviceCount() : 0;
  if (gpus == 0) {
    if (device == Device::kAuto) return makeCpuEngine(layout, maxRows, threads);
    throw BackendError(gpu ? "--device gpu: no usable CUDA device on this node (cudaGetDeviceCount reports none)"
                           : "--device gpu: ringsync-train was built without CUDA");
  }
  return gpu->makeEngine(layout, maxRows, gpuIndex % gpus);
}

}  // namespace ringsync::trainer
