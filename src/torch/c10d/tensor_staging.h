// A tensor as ringsync reads and writes it: one dense block of memory. A non-contiguous tensor
// (a transposed view, a strided slice) goes through a contiguous copy whose result is copied
// back into it, never silently wrong; a contiguous one is used in place, without a copy.
#pragma once

#include <cstddef>

#include <ATen/core/Tensor.h>

#include "ringsync/types.h"

namespace ringsync::torch_backend {

class StagedTensor {
 public:
  // copyIn: the collective reads the tensor's values (false for a pure output: a broadcast on a
  // rank that is not the root, an all-gather's output). Runs on the caller's thread.
  StagedTensor(at::Tensor tensor, bool copyIn);

  // The block ringsync works on, and its length in values of wireType() (complex: 2 per element).
  void* data() const;
  std::size_t count() const;
  DataType wireType() const;
  const at::Tensor& dense() const { return dense_; }

  // Copies the result back into the tensor when a copy was used (on the progress thread).
  void finish() const;

 private:
  at::Tensor tensor_;
  at::Tensor dense_;
};

}  // namespace ringsync::torch_backend
