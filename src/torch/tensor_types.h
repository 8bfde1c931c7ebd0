// How ringsync::torch reads a tensor: its ringsync type, where it lives, and names for errors.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::torch::detail {

// "float32 tensor of shape [64, 784] on cpu", for error messages.
std::string describeTensor(const at::Tensor& tensor);

// The tensor's ringsync type; InvalidArgument naming `who` and the dtype otherwise.
DataType requireDataType(const at::Tensor& tensor, const std::string& who);

// A dense tensor ringsync may read and write in place; InvalidArgument naming `who` otherwise.
void requireDense(const at::Tensor& tensor, const std::string& who);

// The stream ringsync orders a CUDA tensor's collective on: torch's current stream of its device
// (null for a CPU tensor). InvalidArgument for other devices, and for CUDA tensors when this build
// cannot carry them (current_stream_{cuda,none}.cc).
CUstream_st* currentStream(const at::Tensor& tensor, const std::string& who);

}  // namespace ringsync::torch::detail
