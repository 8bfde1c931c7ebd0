// RINGSYNC_CHECK_CUDA(call): every CUDA runtime call goes through it (MSCCL++'s CUDATHROW). On
// failure it throws ringsync::BackendError naming the call, file:line and CUDA's own name and
// message for the error, and clears CUDA's sticky "last error" so the next call starts clean.
// Header-only so that .cu and .cc files alike can use it.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include "check_call.h"
#include "ringsync/errors.h"

namespace ringsync::cuda {

inline std::string cudaErrorText(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

[[noreturn]] inline void throwCudaError(const char* call, const char* file, int line, cudaError_t code) {
  cudaGetLastError();  // reset the non-sticky error state; sticky errors stay, as they must
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cudaErrorText(code));
}

inline bool cudaSucceeded(cudaError_t code) { return code == cudaSuccess; }

}  // namespace ringsync::cuda

#define RINGSYNC_CHECK_CUDA(call) \
  RINGSYNC_CHECK_CALL(call, ::ringsync::cuda::cudaSucceeded, ::ringsync::cuda::throwCudaError)
