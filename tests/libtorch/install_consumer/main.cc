// The README's libtorch examples, reduced: DistributedDataParallel over a linear layer, one step
// with zero_grad() at its default (rank r's input is r + 1, so the averaged weight gradient is
// the mean of 1..n), and a c10d ProcessGroup's allreduce (rank r gives r + 1: the sum is
// n(n + 1)/2). Run: mpirun -np 2 ./torch_consumer
#include <ringsync/ringsync.h>
#include <ringsync/torch.h>
#include <ringsync/torch_c10d.h>

#include <cstdio>
#include <vector>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

namespace {

bool ddpStep(const ringsync::Communicator& comm) {
  torch::nn::Linear layer(4, 1);
  ringsync::torch::DistributedDataParallel ddp(comm, *layer);
  torch::optim::SGD optimizer(layer->parameters(), torch::optim::SGDOptions(0.1));
  optimizer.zero_grad();
  layer->forward(torch::full({1, 4}, comm.rank() + 1.0f)).sum().backward();
  ddp.synchronize();
  const float expected = (comm.size() + 1) / 2.0f;
  const bool ok = torch::equal(layer->weight.grad(), torch::full({1, 4}, expected));
  optimizer.step();
  std::printf("rank %d of %d: weight gradient averaged to %.2f (expected %.2f): %s\n", comm.rank(), comm.size(),
              layer->weight.grad()[0][0].item<float>(), expected, ok ? "ok" : "WRONG");
  return ok;
}

bool processGroupAllreduce() {
  auto pg = ringsync::torch::makeProcessGroup();  // MPI_COMM_WORLD
  std::vector<at::Tensor> tensors{torch::full({8}, pg->getRank() + 1.0)};
  pg->allreduce(tensors)->wait();
  const double expected = pg->getSize() * (pg->getSize() + 1) / 2.0;
  const bool ok = torch::equal(tensors[0], torch::full({8}, expected));
  std::printf("rank %d of %d: ProcessGroup allreduce gave %.1f (expected %.1f): %s\n", pg->getRank(), pg->getSize(),
              tensors[0][0].item<double>(), expected, ok ? "ok" : "WRONG");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv);
  ringsync::Communicator comm(MPI_COMM_WORLD);
  const bool ddpOk = ddpStep(comm);
  const bool pgOk = processGroupAllreduce();  // the group is released here, before MPI is finalised
  return ddpOk && pgOk ? 0 : 1;
}
