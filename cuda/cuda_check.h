// RINGSYNC_CHECK_CUDA(call): every CUDA runtime call goes through it (MSCCL++'s CUDATHROW). On
// failure it throws ringsync::BackendError naming the call, file:line and CUDA's own name and
// message for the error, and clears CUDA's sticky "last error" so the next call starts clean.
// Header-only so that .cu and .cc files alike can use it.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "ringsync/errors.h"

namespace ringsync::cuda {

inline std::string cudaErrorText(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

[[noreturn]] inline void throwCudaError(const char* call, const char* file, int line, cudaError_t code) {
  cudaGetLastError();  // reset the non-sticky error state; sticky errors stay, as they must
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + cudaErrorText(code));
}

}  // namespace ringsync::cuda

#define RINGSYNC_CHECK_CUDA(call)                                                      \
  do {                                                                                 \
    const cudaError_t ringsync_cuda_rc_ = (call);                                      \
    if (ringsync_cuda_rc_ != cudaSuccess)                                              \
      ::ringsync::cuda::throwCudaError(#call, __FILE__, __LINE__, ringsync_cuda_rc_);  \
  } while (0)
