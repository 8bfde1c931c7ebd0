// The one all-gather and the one reduce-scatter every form of them in the backend goes through
// (list, single tensor, coalesced), both ringsync's own collectives (Communicator::allgather,
// Communicator::reduceScatter).
#pragma once

#include <ATen/core/Tensor.h>

#include "ringsync/communicator.h"
#include "tensor_staging.h"

namespace ringsync::torch_backend {

// block (contiguous, size * send's values) = every rank's `send`, rank by rank. ringsync's
// all-gather takes host memory: a CUDA block is gathered through host copies.
void allgatherInto(Communicator& comm, const StagedTensor& send, const at::Tensor& block);

// out = this rank's slice of the reduction over the ranks of `whole` (contiguous, size * out's
// values; only read): ringsync's reduce-scatter, (n-1)/n of the bytes per rank, on `cudaStream`
// for CUDA tensors.
void reduceScatterInto(Communicator& comm, const StagedTensor& whole, const at::Tensor& out, ReduceOp op,
                       CUstream_st* cudaStream);

}  // namespace ringsync::torch_backend
