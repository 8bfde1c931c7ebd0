// CUDA tensors: ringsync's device path on torch's current stream (ringsync and torch both built
// with CUDA). Compiled, never run, on the development machines (no GPU).
#include <c10/cuda/CUDAStream.h>

#include "ringsync/errors.h"
#include "tensor_types.h"

namespace ringsync::torch::detail {

CUstream_st* currentStream(const at::Tensor& tensor, const std::string& who) {
  if (tensor.device().is_cpu()) return nullptr;
  if (!tensor.device().is_cuda())
    throw InvalidArgument(who + ": a tensor on " + tensor.device().str() + "; ringsync carries CPU and CUDA tensors");
  return c10::cuda::getCurrentCUDAStream(tensor.device().index()).stream();
}

}  // namespace ringsync::torch::detail
