// A module's parameters and buffers as DistributedDataParallel sees them, the cross-rank check
// that every rank holds the same model, and the copy of rank 0's values to every rank.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ringsync/communicator.h"

namespace torch::nn {
class Module;
}

namespace ringsync::torch::detail {

struct NamedTensor {
  std::string name;  // "fc1.weight", as Module::named_parameters() names it
  at::Tensor tensor;
};

struct ModelTensors {
  std::vector<NamedTensor> parameters;  // every parameter, in registration order
  std::vector<NamedTensor> buffers;
};

ModelTensors collectModel(::torch::nn::Module& module);

// Collective: MismatchError on every rank, naming the ranks and the first tensor that differs,
// unless every rank holds the same names, shapes, dtypes, requires_grad and device kinds.
void checkSameModelOnAllRanks(Communicator& comm, const ModelTensors& model);

// Collective: every rank's tensors take rank 0's values (one broadcast per dtype and device).
void broadcastFromRankZero(Communicator& comm, const std::vector<NamedTensor>& tensors);

}  // namespace ringsync::torch::detail
