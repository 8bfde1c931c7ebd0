// ringsync-train: mpirun -np N ringsync-train [options]. Exit status 0 on success; 1 when the run
// failed on every rank together (bad option value, bad data or checkpoint file, diverged
// replicas); a failure on some ranks only aborts the whole job (MPI_Abort) so nothing hangs.
#include <iostream>

#include "ringsync/communicator.h"
#include "ringsync/mpi_environment.h"
#include "cli.h"
#include "errors.h"
#include "run_training.h"
#ifdef RINGSYNC_TRAINER_WITH_CUDA
#include "gpu_compute.h"
#endif

int main(int argc, char** argv) {
  using namespace ringsync::trainer;
  ringsync::MpiEnvironment mpi(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  TrainerConfig config;
  if (auto code = parseCommandLine(argc, argv, config, rank == 0, std::cout, std::cerr)) return *code;
  try {
    ringsync::Options options = ringsync::Options::fromEnvironment();
    if (!config.timelinePath.empty()) options.timelinePath = config.timelinePath;
    ringsync::Communicator comm(MPI_COMM_WORLD, options);
#ifdef RINGSYNC_TRAINER_WITH_CUDA
    const GpuHooks hooks = gpuHooks();
    const GpuHooks* gpu = &hooks;
#else
    const GpuHooks* gpu = nullptr;
#endif
    runTraining(comm, config, gpu, &std::cout);
    return 0;
  } catch (const CollectiveFailure& error) {
    if (rank == 0) std::cerr << "ringsync-train: error: " << error.what() << std::endl;
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "ringsync-train [rank " << rank << "]: error: " << error.what() << std::endl;
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
}
