#include "staged_cuda.h"

#include "cuda/cuda_check.h"

namespace ringsync::detail {
namespace {
constexpr std::size_t kPinnedGranuleBytes = std::size_t{1} << 20;  // grow in whole MiB
}

CudaStagingMemory::~CudaStagingMemory() {
  if (uploadPending_ && uploaded_) cudaEventSynchronize(uploaded_->get());
}

void* CudaStagingMemory::hostBuffer(std::size_t bytes) {
  finish();
  if (bytes > pinned_.bytes()) {
    pinned_ = cuda::PinnedBuffer();  // free first: the old and new buffer need not coexist
    pinned_ = cuda::PinnedBuffer((bytes + kPinnedGranuleBytes - 1) / kPinnedGranuleBytes * kPinnedGranuleBytes);
  }
  return pinned_.data();
}

void CudaStagingMemory::download(void* host, const void* device, std::size_t bytes, CUstream_st* stream) {
  RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream));
  RINGSYNC_CHECK_CUDA(cudaStreamSynchronize(stream));
}

void CudaStagingMemory::upload(void* device, const void* host, std::size_t bytes, CUstream_st* stream) {
  if (!uploaded_) uploaded_.emplace();
  RINGSYNC_CHECK_CUDA(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
  uploaded_->record(stream);
  uploadPending_ = true;
}

void CudaStagingMemory::finish() {
  if (!uploadPending_) return;
  uploaded_->synchronize();
  uploadPending_ = false;
}

}  // namespace ringsync::detail
