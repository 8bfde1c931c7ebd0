// The few CUDA driver functions ringsync needs to look at pointers and contexts without creating
// a context (runtime calls such as cudaPointerGetAttributes or cudaSetDevice initialise the primary
// context of the thread's current device, GPU 0 by default: hundreds of MB per rank, and a failure
// under EXCLUSIVE_PROCESS). Resolved once through the runtime (cudaGetDriverEntryPointByVersion):
// no link to libcuda, and nothing is resolved in a process that never asks.
#pragma once

#include <cuda.h>

namespace ringsync::cuda {

struct DriverApi {
  CUresult (*ctxGetCurrent)(CUcontext*) = nullptr;
  CUresult (*ctxSetCurrent)(CUcontext) = nullptr;
  CUresult (*deviceGet)(CUdevice*, int) = nullptr;
  CUresult (*primaryCtxGetState)(CUdevice, unsigned int*, int*) = nullptr;
  CUresult (*pointerGetAttributes)(unsigned int, CUpointer_attribute*, void**, CUdeviceptr) = nullptr;
};

// Throws BackendError naming the symbol when the driver lacks one (a driver older than CUDA 12).
const DriverApi& driverApi();

// "cuPointerGetAttributes: CUDA_ERROR_INVALID_VALUE (invalid argument)".
const char* driverErrorName(CUresult result);

// Whether the calling thread has a current CUDA context (the driver's view; creates none).
bool threadHasContext();

// Whether any CUDA context exists in this process: this thread's, or an active primary context on
// one of the `deviceCount` devices. Without one no device memory can exist. Sticky once true
// (one driver call per device and one for the thread until then; the device count is read once).
bool anyContextExists(int deviceCount);

}  // namespace ringsync::cuda
