// torch dtypes and reduce ops as ringsync carries them. Every check runs on the caller's thread,
// before anything is queued, so a rank with bad input fails at the call (as Gloo does) and never
// sends half a collective.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "ringsync/types.h"

namespace ringsync::torch_backend {

// Python's spelling of a dtype ("torch.int16"), as the user wrote it.
std::string dtypeName(at::ScalarType dtype);
// For messages: "torch.float32 x 12" (dtype and element count), "12 torch.float32 elements".
std::string shapeText(const at::Tensor& tensor);
std::string elementsText(int64_t count, const at::Tensor& like);

// A torch ReduceOp as ringsync's; anything else raises InvalidArgument naming it and `call`.
ReduceOp ringsyncOp(const ::c10d::ReduceOp& op, const char* call);

// Raises InvalidArgument unless ringsync can carry `tensor`'s dtype (for `op`, when it reduces).
void checkDtype(const at::Tensor& tensor, const char* call, std::optional<ReduceOp> op = std::nullopt);

// How a tensor's elements travel: bool as 0/1 bytes, complex as (real, imaginary) pairs.
struct WireFormat {
  DataType type;
  std::size_t valuesPerElement;  // 2 for complex
};
WireFormat wireFormat(at::ScalarType dtype);  // for a dtype checkDtype accepted

// The op ringsync applies to the bytes of a `dtype` tensor for torch's `op`: on bool, sum and max
// are logical or, product and min logical and (torch's meaning), reduced as 0/1 bytes.
ReduceOp wireOp(at::ScalarType dtype, ReduceOp op);

// `op` (not kAvg) over `tensors` (one dtype and shape) element by element, as a new contiguous
// tensor: what one rank contributes to an all-reduce of a list (Gloo's meaning).
at::Tensor reduceLocally(const std::vector<at::Tensor>& tensors, ReduceOp op);
// tensor /= divisor, in place; integers truncated toward zero (as ringsync's average).
void divideInPlace(const at::Tensor& tensor, int64_t divisor);

}  // namespace ringsync::torch_backend
