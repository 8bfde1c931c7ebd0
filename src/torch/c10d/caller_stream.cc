#include "caller_stream.h"

#include <sstream>
#include <string>

#include "ringsync/errors.h"

#include <c10/core/impl/VirtualGuardImpl.h>

#if RINGSYNC_C10D_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace ringsync::torch_backend {
namespace {

// Python's spelling of a layout ("torch.sparse_coo").
std::string layoutName(const at::Tensor& t) {
  switch (t.layout()) {
    case at::kSparse: return "torch.sparse_coo";
    case at::kSparseCsr: return "torch.sparse_csr";
    case at::kSparseCsc: return "torch.sparse_csc";
    case at::kSparseBsr: return "torch.sparse_bsr";
    case at::kSparseBsc: return "torch.sparse_bsc";
    default: break;
  }
  std::ostringstream name;
  name << t.layout();
  return "torch layout " + name.str();
}

// Sparse (and other non-strided) tensors have no dense block for ringsync to carry; refused by name
// before torch's own checks fail with "unsupported memory format option Contiguous".
void requireDense(const std::vector<at::Tensor>& tensors, const char* call) {
  for (const at::Tensor& t : tensors)
    if (t.defined() && t.layout() != at::kStrided)
      throw InvalidArgument(std::string("ringsync backend: ") + call + " of a " + layoutName(t) +
                            " tensor: ringsync carries dense (strided) tensors. Make it dense (tensor.to_dense()), "
                            "or run this collective on a 'gloo' group (dist.new_group(backend=\"gloo\")); for "
                            "DDP with nn.Embedding(sparse=True): DDP(model, process_group=that group)");
}

std::optional<c10::Device> cudaDeviceOf(const std::vector<at::Tensor>& tensors, const char* call) {
  requireDense(tensors, call);
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

std::shared_ptr<c10::Event> CallerStream::recordDone() const {
  if (!stream_) return nullptr;
  auto done = std::make_shared<c10::Event>(stream_->device_type());
  done->record(*stream_);
  return done;
}

void CallerStream::blockCurrentStream(const c10::Event& done) {
  const c10::impl::VirtualGuardImpl device(done.device_type());
  done.block(device.getStream(c10::Device(done.device_type(), done.device_index())));
}

}  // namespace ringsync::torch_backend
