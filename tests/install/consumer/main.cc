// The README's C++ example: a program that manages MPI itself, averages a gradient vector and
// broadcasts parameters with ringsync. Run: mpirun -np 2 ./consumer
#include <ringsync/ringsync.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the trainer's own MPI set-up
  int status = 0;
  {
    ringsync::Communicator comm(MPI_COMM_WORLD);
    const std::size_t n = 1 << 20;
    std::vector<float> grads(n, static_cast<float>(comm.rank() + 1));  // rank r contributes r + 1
    comm.allreduce(grads.data(), grads.data(), grads.size(), ringsync::DataType::kFloat32, ringsync::ReduceOp::kAvg);
    std::vector<float> params(1000, comm.rank() == 0 ? 0.5f : -1.0f);
    comm.broadcast(params.data(), params.size(), ringsync::DataType::kFloat32, /*root=*/0);

    const float expected = (comm.size() + 1) / 2.0f;  // mean of 1..n
    const bool ok = grads[0] == expected && grads[n - 1] == expected && params[999] == 0.5f;
    std::printf("rank %d of %d: averaged %zu floats -> %.2f (expected %.2f), broadcast from rank 0 -> %.2f: %s\n",
                comm.rank(), comm.size(), n, grads[0], expected, params[999], ok ? "ok" : "WRONG");
    status = ok ? 0 : 1;
  }
  MPI_Finalize();
  return status;
}
