// Host memory to stage device buffers through, and the copies in and out of it, as the device
// layer supplies them (pinned memory and cudaMemcpyAsync in staged_cuda.h). The control flow that
// uses it is the Communicator core's (src/staged_path.h).
#pragma once

#include <cstddef>

struct CUstream_st;

namespace ringsync::detail {

class StagingMemory {
 public:
  virtual ~StagingMemory() = default;
  // Host memory for at least `bytes`, reused across calls. Waits until earlier uploads out of it
  // have completed, so it may be overwritten.
  virtual void* hostBuffer(std::size_t bytes) = 0;
  // device -> host, ordered after the work on `stream`; returns once the bytes are on the host.
  virtual void download(void* host, const void* device, std::size_t bytes, CUstream_st* stream) = 0;
  // host -> device, enqueued on `stream`; hostBuffer() and finish() wait for it.
  virtual void upload(void* device, const void* host, std::size_t bytes, CUstream_st* stream) = 0;
  // Returns once the last upload has completed.
  virtual void finish() = 0;
};

}  // namespace ringsync::detail
