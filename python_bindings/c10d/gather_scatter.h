// The one all-gather and the one reduce-scatter every form of them in the backend goes through
// (list, single tensor, coalesced): a native implementation replaces these two functions.
#pragma once

#include <ATen/core/Tensor.h>

#include "ringsync/communicator.h"
#include "tensor_staging.h"

namespace ringsync::torch_backend {

// block (contiguous, size * send's values) = every rank's `send`, rank by rank. ringsync's
// all-gather takes host memory: a CUDA block is gathered through host copies.
void allgatherInto(Communicator& comm, const StagedTensor& send, const at::Tensor& block);

// out = this rank's slice of the reduction over the ranks of `whole` (contiguous, size * out's
// values; a private copy, overwritten). ringsync has no reduce-scatter of its own yet: composed
// from its all-reduce (twice the bytes of a native one), keeping this rank's slice.
void reduceScatterInto(Communicator& comm, const StagedTensor& whole, const at::Tensor& out, ReduceOp op,
                       CUstream_st* cudaStream);

}  // namespace ringsync::torch_backend
