// RAII for the GPU engine's CUDA and cuBLAS resources, and the checks every CUDA/cuBLAS call goes
// through: a failure raises BackendError naming the call, file:line and the library's message.
// Compiled only with CUDA (ringsync_trainer_gpu).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "ringsync/errors.h"

namespace ringsync::trainer::gpu {

[[noreturn]] inline void throwCuda(const char* call, const char* file, int line, cudaError_t code) {
  cudaGetLastError();  // clear the non-sticky error so the next call starts clean
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cudaGetErrorName(code) + ": " + cudaGetErrorString(code));
}

[[noreturn]] inline void throwCublas(const char* call, const char* file, int line, cublasStatus_t status) {
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     cublasGetStatusName(status) + ": " + cublasGetStatusString(status));
}

}  // namespace ringsync::trainer::gpu

#define RINGSYNC_TRAINER_CHECK_CUDA(call)                                                                          \
  do {                                                                                                             \
    const cudaError_t ringsync_rc_ = (call);                                                                       \
    if (ringsync_rc_ != cudaSuccess) ::ringsync::trainer::gpu::throwCuda(#call, __FILE__, __LINE__, ringsync_rc_); \
  } while (0)

#define RINGSYNC_TRAINER_CHECK_CUBLAS(call)                                           \
  do {                                                                                \
    const cublasStatus_t ringsync_st_ = (call);                                       \
    if (ringsync_st_ != CUBLAS_STATUS_SUCCESS)                                        \
      ::ringsync::trainer::gpu::throwCublas(#call, __FILE__, __LINE__, ringsync_st_); \
  } while (0)

namespace ringsync::trainer::gpu {

// `count` elements of T in device memory (cudaMalloc / cudaFree), move-only.
template <typename T> class DeviceArray {
 public:
  DeviceArray() = default;
  explicit DeviceArray(std::size_t count) : count_(count) {
    if (count > 0) RINGSYNC_TRAINER_CHECK_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T)));
  }
  ~DeviceArray() {
    if (data_) cudaFree(data_);
  }
  DeviceArray(DeviceArray&& other) noexcept { *this = std::move(other); }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return data_; }
  std::size_t count() const { return count_; }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

class Stream {
 public:
  Stream() { RINGSYNC_TRAINER_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(stream_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  void synchronize() const { RINGSYNC_TRAINER_CHECK_CUDA(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t stream) {
    RINGSYNC_TRAINER_CHECK_CUBLAS(cublasCreate(&handle_));
    const cublasStatus_t status = cublasSetStream(handle_, stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
      cublasDestroy(handle_);
      throwCublas("cublasSetStream", __FILE__, __LINE__, status);
    }
  }
  ~CublasHandle() { cublasDestroy(handle_); }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace ringsync::trainer::gpu
