// StagingMemory on CUDA: one pinned host buffer per communicator, grown to the largest message
// and kept (pinning is slow: cudaMallocHost of 1 GiB takes a sizeable fraction of a second), and
// cudaMemcpyAsync on the caller's stream with an event marking the last upload.
#pragma once

#include <cstddef>
#include <optional>

#include "staging_memory.h"
#include "cuda/device_memory.h"

namespace ringsync::detail {

class CudaStagingMemory final : public StagingMemory {
 public:
  CudaStagingMemory() = default;  // makes no CUDA call until first used
  ~CudaStagingMemory() override;  // waits for a pending upload before the pinned memory goes

  void* hostBuffer(std::size_t bytes) override;
  void download(void* host, const void* device, std::size_t bytes, CUstream_st* stream) override;
  void upload(void* device, const void* host, std::size_t bytes, CUstream_st* stream) override;
  void finish() override;

 private:
  cuda::PinnedBuffer pinned_;
  std::optional<cuda::Event> uploaded_;  // created on the first upload
  bool uploadPending_ = false;
};

}  // namespace ringsync::detail
