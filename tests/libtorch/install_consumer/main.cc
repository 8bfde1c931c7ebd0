// The README's libtorch example, reduced: DistributedDataParallel over a linear layer, one step
// with zero_grad() at its default; rank r's input is r + 1, so the averaged weight gradient is
// the mean of 1..n. Run: mpirun -np 2 ./torch_consumer
#include <ringsync/ringsync.h>
#include <ringsync/torch.h>

#include <cstdio>

#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv);
  ringsync::Communicator comm(MPI_COMM_WORLD);
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
  return ok ? 0 : 1;
}
