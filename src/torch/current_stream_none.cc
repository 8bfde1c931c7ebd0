// CUDA tensors are refused by name where ringsync or torch was built without CUDA.
#include "ringsync/errors.h"
#include "tensor_types.h"

namespace ringsync::torch::detail {

CUstream_st* currentStream(const at::Tensor& tensor, const std::string& who) {
  if (tensor.device().is_cpu()) return nullptr;
  if (tensor.device().is_cuda())
    throw InvalidArgument(who + ": a tensor on " + tensor.device().str() +
                          ", but this ringsync::torch was built without CUDA (it needs ringsync built with CUDA, "
                          "RINGSYNC_ENABLE_CUDA=ON and nvcc found, and a CUDA build of libtorch)");
  throw InvalidArgument(who + ": a tensor on " + tensor.device().str() + "; ringsync carries CPU and CUDA tensors");
}

}  // namespace ringsync::torch::detail
