#include "gpu_test_support.h"

#include <cuda_runtime_api.h>
#include <mpi.h>

namespace ringsync::test {

int cudaDevices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

bool everyRankHasGpu() {
  const int count = cudaDevices();
  if (!allRanks(count > 0)) return false;
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, worldRank(), MPI_INFO_NULL, &node);
  int localRank = 0;
  MPI_Comm_rank(node, &localRank);
  MPI_Comm_free(&node);
  return allRanks(cudaSetDevice(localRank % count) == cudaSuccess);
}

}  // namespace ringsync::test
