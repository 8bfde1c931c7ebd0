#include "caller_stream.h"

#include <string>

#include "ringsync/errors.h"

#if RINGSYNC_C10D_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace ringsync::torch_backend {
namespace {

std::optional<c10::Device> cudaDeviceOf(const std::vector<at::Tensor>& tensors, const char* call) {
  std::optional<c10::Device> device;
  for (const at::Tensor& t : tensors) {
    if (t.device().is_cpu()) continue;
    if (!t.device().is_cuda())
      throw InvalidArgument(std::string("ringsync backend: ") + call + " of a tensor on " + t.device().str() +
                            ": ringsync carries CPU and CUDA tensors");
    if (device && *device != t.device())
      throw InvalidArgument(std::string("ringsync backend: one ") + call + "'s tensors span " + device->str() +
                            " and " + t.device().str() + "; use one device per rank");
    device = t.device();
  }
  if (device) {
    for (const at::Tensor& t : tensors)
      if (t.device().is_cpu())
        throw InvalidArgument(std::string("ringsync backend: one ") + call + " mixes CPU and CUDA tensors");
  }
  return device;
}

}  // namespace

#if RINGSYNC_C10D_WITH_CUDA

CallerStream::CallerStream(const std::vector<at::Tensor>& tensors, const char* call) {
  if (const auto device = cudaDeviceOf(tensors, call)) stream_ = c10::cuda::getCurrentCUDAStream(device->index());
}

CUstream_st* CallerStream::cudaStream() const {
  return stream_ ? c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, *stream_).stream() : nullptr;
}

CallerStream::Current::Current(const CallerStream& stream) {
  if (!stream.stream_) return;
  previous_ = c10::cuda::getCurrentCUDAStream(stream.stream_->device_index());
  c10::cuda::setCurrentCUDAStream(c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, *stream.stream_));
}

CallerStream::Current::~Current() {
  if (previous_) c10::cuda::setCurrentCUDAStream(c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, *previous_));
}

#else

CallerStream::CallerStream(const std::vector<at::Tensor>& tensors, const char* call) {
  if (cudaDeviceOf(tensors, call))
    throw InvalidArgument(std::string("ringsync backend: ") + call +
                          " of a CUDA tensor: this ringsync.torch was built without CUDA (it needs ringsync's CUDA "
                          "build, RINGSYNC_ENABLE_CUDA=ON, and torch's CUDA build)");
}

CUstream_st* CallerStream::cudaStream() const { return nullptr; }

CallerStream::Current::Current(const CallerStream&) {}

CallerStream::Current::~Current() = default;

#endif

std::vector<c10::Device> CallerStream::devices() const {
  if (!stream_) return {};
  return {stream_->device()};
}

}  // namespace ringsync::torch_backend
