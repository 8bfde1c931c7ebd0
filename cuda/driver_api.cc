#include "driver_api.h"

#include <atomic>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda_check.h"
#include "ringsync/errors.h"

namespace ringsync::cuda {
namespace {

// The ABI of each function as of CUDA 12.0, the oldest driver this build supports.
constexpr unsigned int kDriverAbiVersion = 12000;

template <typename Function> void resolve(const char* symbol, Function*& out) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t rc = cudaGetDriverEntryPointByVersion(symbol, &address, kDriverAbiVersion, cudaEnableDefault,
                                                          &found);
  if (rc != cudaSuccess || found != cudaDriverEntryPointSuccess || address == nullptr) {
    if (rc != cudaSuccess) cudaGetLastError();  // our query's error only, reported here
    throw BackendError(std::string("the CUDA driver does not provide ") + symbol +
                       (rc != cudaSuccess ? " (" + cudaErrorText(rc) + ")" : std::string()) +
                       "; ringsync needs a driver for CUDA 12.0 or later");
  }
  out = reinterpret_cast<Function*>(address);
}

DriverApi load() {
  DriverApi api;
  resolve("cuCtxGetCurrent", api.ctxGetCurrent);
  resolve("cuCtxSetCurrent", api.ctxSetCurrent);
  resolve("cuDeviceGet", api.deviceGet);
  resolve("cuDevicePrimaryCtxGetState", api.primaryCtxGetState);
  resolve("cuPointerGetAttributes", api.pointerGetAttributes);
  return api;
}

}  // namespace

const DriverApi& driverApi() {
  static const DriverApi api = load();  // a failed load throws, and is retried by the next caller
  return api;
}

const char* driverErrorName(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    default: return "a CUDA driver error";
  }
}

bool threadHasContext() {
  CUcontext context = nullptr;
  return driverApi().ctxGetCurrent(&context) == CUDA_SUCCESS && context != nullptr;
}

bool anyContextExists(int deviceCount) {
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  // A host-only process on a GPU node asks this on every call: one driver call per device.
  static const std::vector<CUdevice> devices = [deviceCount] {
    std::vector<CUdevice> handles;
    for (int ordinal = 0; ordinal < deviceCount; ++ordinal) {
      CUdevice device = 0;
      if (driverApi().deviceGet(&device, ordinal) == CUDA_SUCCESS) handles.push_back(device);
    }
    return handles;
  }();
  bool exists = threadHasContext();
  for (std::size_t d = 0; !exists && d < devices.size(); ++d) {
    unsigned int flags = 0;
    int active = 0;
    exists = driverApi().primaryCtxGetState(devices[d], &flags, &active) == CUDA_SUCCESS && active != 0;
  }
  if (exists) seen.store(true, std::memory_order_relaxed);
  return exists;
}

}  // namespace ringsync::cuda
