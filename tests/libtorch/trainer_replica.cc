#include "trainer_replica.h"

#include <stdexcept>

#include "example_models.h"

namespace ringsync_example {

const char* syncName(Sync sync) {
  switch (sync) {
    case Sync::kDdp: return "ddp";
    case Sync::kCommunicator: return "communicator";
    case Sync::kMpi: return "mpi";
    case Sync::kNone: return "none";
  }
  return "?";
}

std::optional<Sync> parseSync(const std::string& name) {
  for (Sync s : {Sync::kDdp, Sync::kCommunicator, Sync::kMpi, Sync::kNone})
    if (name == syncName(s)) return s;
  return std::nullopt;
}

std::string describeModel(const ModelSpec& spec) {
  std::string text = spec.kind;
  if (spec.kind == "mlp") {
    text += " 784";
    for (int64_t width : spec.hidden) {
      text += '-';  // appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "-" + string
      text += std::to_string(width);
    }
    text += "-10";
  }
  return text + (spec.dtype == ::torch::kDouble ? " float64" : " float32");
}

Replica::Replica(const ModelSpec& spec, std::uint64_t seed, Sync sync, ringsync::Communicator& comm, MPI_Comm mpiComm)
    : sync_(sync), comm_(&comm), mpiComm_(mpiComm) {
  ::torch::manual_seed(seed);
  if (spec.kind == "mlp") {
    Mlp mlp(spec.hidden);
    module_ = mlp.ptr();
    forward_ = [mlp](const ::torch::Tensor& x) mutable { return mlp->forward(x); };
  } else if (spec.kind == "cnn") {
    Cnn cnn;
    module_ = cnn.ptr();
    forward_ = [cnn](const ::torch::Tensor& x) mutable { return cnn->forward(x); };
  } else {
    throw std::invalid_argument("--model " + spec.kind + ": use mlp or cnn");
  }
  module_->to(spec.dtype);
  if (sync == Sync::kDdp) {
    ringsync::torch::DistributedDataParallelOptions options;
    options.overlap = spec.ddpOverlap;
    ddp_ = std::make_unique<ringsync::torch::DistributedDataParallel>(comm, *module_, options);
  } else if (sync != Sync::kNone) {
    const ::torch::NoGradGuard noGrad;
    for (const ::torch::Tensor& p : module_->parameters()) ringsync::torch::broadcast(comm, p, /*root=*/0);
  }
  optimizer_ = std::make_unique<::torch::optim::SGD>(
      module_->parameters(), ::torch::optim::SGDOptions(spec.learningRate).momentum(spec.momentum));
}

int64_t Replica::parameterCount() const {
  int64_t count = 0;
  for (const ::torch::Tensor& p : module_->parameters()) count += p.numel();
  return count;
}

double Replica::step(const ::torch::Tensor& x, const ::torch::Tensor& y) {
  optimizer_->zero_grad();  // libtorch's default: every .grad is freed (set_to_none)
  const ::torch::Tensor loss = ::torch::nn::functional::cross_entropy(forward_(x), y);
  loss.backward();
  averageGradients();
  optimizer_->step();
  return loss.item<double>();
}

void Replica::averageGradients() {
  switch (sync_) {
    case Sync::kDdp: ddp_->synchronize(); return;
    case Sync::kCommunicator:
      for (const ::torch::Tensor& p : module_->parameters())
        ringsync::torch::allreduce(*comm_, p.grad(), ringsync::ReduceOp::kAvg);  // kAvg: no divide afterwards
      return;
    case Sync::kMpi:
      for (const ::torch::Tensor& p : module_->parameters()) {
        ::torch::Tensor grad = p.grad();
        const MPI_Datatype type = grad.scalar_type() == ::torch::kDouble ? MPI_DOUBLE : MPI_FLOAT;
        MPI_Allreduce(MPI_IN_PLACE, grad.data_ptr(), static_cast<int>(grad.numel()), type, MPI_SUM, mpiComm_);
        grad.div_(comm_->size());
      }
      return;
    case Sync::kNone: return;
  }
}

}  // namespace ringsync_example
