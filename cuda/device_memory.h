// RAII owners for CUDA resources (MSCCL++'s gpu_utils.hpp): device and pinned host memory,
// streams, events, and a guard that makes a device current for a scope. Move-only; destructors
// never throw (a failed free during teardown is ignored: there is nothing left to recover).
// No cudaMalloc/cudaFree/cudaMallocHost appears outside these classes.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda/cuda_check.h"
#include "cuda/driver_api.h"

namespace ringsync::cuda {

// `bytes` of device memory on the current device (cudaMalloc: 256-byte aligned).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) RINGSYNC_CHECK_CUDA(cudaMalloc(&data_, bytes));
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFree(data_);
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T> T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (cudaMallocHost): the only host memory a copy engine reads and writes
// asynchronously at full speed.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes > 0) RINGSYNC_CHECK_CUDA(cudaMallocHost(&data_, bytes));
  }
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    if (this != &other) {
      if (data_) cudaFreeHost(data_);
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// A non-blocking stream (does not synchronise with the legacy default stream).
class Stream {
 public:
  Stream() { RINGSYNC_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (stream_) cudaStreamDestroy(stream_);
  }
  Stream(Stream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  Stream& operator=(Stream&& other) noexcept {
    if (this != &other) {
      if (stream_) cudaStreamDestroy(stream_);
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const { RINGSYNC_CHECK_CUDA(cudaStreamSynchronize(stream_)); }

 private:
  cudaStream_t stream_ = nullptr;
};

// An event; without timing by default (cheaper to record and wait on).
class Event {
 public:
  explicit Event(bool timing = false) {
    RINGSYNC_CHECK_CUDA(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() {
    if (event_) cudaEventDestroy(event_);
  }
  Event(Event&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  Event& operator=(Event&& other) noexcept {
    if (this != &other) {
      if (event_) cudaEventDestroy(event_);
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t stream) { RINGSYNC_CHECK_CUDA(cudaEventRecord(event_, stream)); }
  void synchronize() const { RINGSYNC_CHECK_CUDA(cudaEventSynchronize(event_)); }
  // Milliseconds from `start` to this event (both recorded with timing).
  float millisecondsSince(const Event& start) const {
    float ms = 0;
    RINGSYNC_CHECK_CUDA(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

// Makes `device` current for the scope and restores what the caller's thread had afterwards, so the
// library never leaves the caller's thread on another GPU. A thread that had no CUDA context (a
// fresh thread, a host-only program) gets none back: restoring "device 0" with cudaSetDevice would
// create a context on GPU 0 that the caller never asked for.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) : hadContext_(threadHasContext()) {
    if (hadContext_) RINGSYNC_CHECK_CUDA(cudaGetDevice(&previous_));
    if (!hadContext_ || previous_ != device) {
      RINGSYNC_CHECK_CUDA(cudaSetDevice(device));
      restore_ = true;
    }
  }
  ~DeviceGuard() {
    if (!restore_) return;
    if (hadContext_) cudaSetDevice(previous_);
    else driverApi().ctxSetCurrent(nullptr);  // back to no current context, as the thread was
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  bool hadContext_;
  bool restore_ = false;
  int previous_ = -1;
};

}  // namespace ringsync::cuda
