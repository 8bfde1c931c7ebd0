// The memory the bench sweeps over: host buffers (page-aligned and touched once up front, so no
// first-touch page fault lands inside a timed iteration) or, for --backend nccl|staged, device
// buffers, plus where the work runs and how it is timed (steady clock / CUDA events on the bench's stream).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

struct CUstream_st;

namespace ringsync::bench {

class PerfMemory {
 public:
  virtual ~PerfMemory() = default;
  virtual void* data() = 0;
  // Host bytes in / out (a plain memcpy for host memory, cudaMemcpy for device memory).
  virtual void upload(const void* host, std::size_t bytes) = 0;
  virtual void download(void* host, std::size_t bytes) = 0;
};

// Where the timed work runs: the host thread, or the bench's CUDA stream.
class PerfStream {
 public:
  virtual ~PerfStream() = default;
  virtual CUstream_st* stream() = 0;                                     // nullptr for host buffers
  virtual void copy(void* to, const void* from, std::size_t bytes) = 0;  // ordered with the collectives
  virtual void start() = 0;
  virtual double stopSeconds() = 0;  // waits for the work since start() to finish
  virtual void synchronize() = 0;    // waits for everything enqueued so far
};

std::unique_ptr<PerfMemory> makeHostMemory(std::size_t bytes);
std::unique_ptr<PerfStream> makeHostStream();

// Device side; available only when ringsync was built with CUDA and a GPU is present.
// Makes `device` (Communicator::cudaDevice(), -1 when there is none) current, so that the bench's
// own device memory and streams sit on the GPU the communicator uses. Returns "" when it is,
// otherwise why not (for the error message).
std::string useDevice(int device);
std::unique_ptr<PerfMemory> makeDeviceMemory(std::size_t bytes);
std::unique_ptr<PerfStream> makeDeviceStream();

}  // namespace ringsync::bench
