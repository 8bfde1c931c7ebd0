// One replica of the libtorch example trainer: a model, its SGD-momentum optimizer and the way its
// gradients are averaged over the ranks after backward:
//   ddp           ringsync::torch::DistributedDataParallel (buckets during backward where it overlaps)
//   communicator  ringsync::torch::allreduce(comm, p.grad(), kAvg) per parameter, after backward
//   mpi           MPI_Allreduce(MPI_IN_PLACE, ..., MPI_SUM) per parameter, then grad /= ranks
//                 (pytorch/examples' cpp/distributed/dist-mnist.cpp)
//   none          nothing: the single-process reference on the whole batch
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>
#include <torch/torch.h>

#include "ringsync/communicator.h"
#include "ringsync/torch.h"

namespace ringsync_example {

enum class Sync { kDdp, kCommunicator, kMpi, kNone };
const char* syncName(Sync sync);
std::optional<Sync> parseSync(const std::string& name);

struct ModelSpec {
  std::string kind = "mlp";                 // mlp | cnn
  std::vector<int64_t> hidden = {128, 64};  // the MLP's hidden widths
  ::torch::Dtype dtype = ::torch::kFloat;
  double learningRate = 0.05;
  double momentum = 0.9;
  std::optional<bool> ddpOverlap;  // ddp: DistributedDataParallelOptions::overlap (unset: DDP decides)
};

std::string describeModel(const ModelSpec& spec);

class Replica {
 public:
  // The model's initial weights come from torch::manual_seed(seed). Collective over `comm` for
  // ddp (its constructor) and communicator/mpi (rank 0's weights are broadcast): afterwards every
  // rank's replica holds rank 0's weights.
  Replica(const ModelSpec& spec, std::uint64_t seed, Sync sync, ringsync::Communicator& comm, MPI_Comm mpiComm);

  // zero_grad (libtorch's default: set_to_none), forward, cross-entropy (the mean over this
  // batch), backward, the gradient average, the SGD step. Returns the loss.
  double step(const ::torch::Tensor& x, const ::torch::Tensor& y);

  std::vector<::torch::Tensor> parameters() const { return module_->parameters(); }
  int64_t parameterCount() const;
  // DistributedDataParallel's averager statistics after the last step (ddp only).
  const ringsync::torch::DistributedDataParallel* ddp() const { return ddp_.get(); }
  Sync sync() const { return sync_; }

 private:
  void averageGradients();

  Sync sync_;
  ringsync::Communicator* comm_;
  MPI_Comm mpiComm_;
  std::shared_ptr<::torch::nn::Module> module_;
  std::function<::torch::Tensor(const ::torch::Tensor&)> forward_;
  std::unique_ptr<::torch::optim::SGD> optimizer_;
  std::unique_ptr<ringsync::torch::DistributedDataParallel> ddp_;
};

}  // namespace ringsync_example
