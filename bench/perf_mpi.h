// The baseline: Open MPI's own MPI_Allreduce / MPI_Reduce_scatter_block / MPI_Allgather /
// MPI_Bcast on host buffers, for any ringsync
// DataType and ReduceOp, through the library's allreduceThroughMpi without a deadline, i.e. the
// blocking MPI_Allreduce (collectives/mpi_allreduce.h; RINGSYNC_ALGO=mpi polls MPI_Iallreduce):
// large counts in pieces (MPI counts are int), float16 and bfloat16 reduced by user-defined ops
// over ringsync's kernels (so they round as ringsync does), avg as MPI_SUM followed by one
// division, since MPI has no average. No fingerprint round: this is the bare MPI call.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "ringsync/types.h"

namespace ringsync::bench {

class MpiBaseline {
 public:
  explicit MpiBaseline(MPI_Comm comm);

  // send == recv means in place (MPI_IN_PLACE).
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) const;
  void broadcast(void* buf, std::size_t count, DataType type, int root) const;
  // Out of place only (MPI_IN_PLACE puts these results elsewhere than ringsync does); recvCount /
  // sendCount must fit MPI's int.
  void reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op) const;
  void allgather(const void* send, void* recv, std::size_t sendCount, DataType type) const;

 private:
  MPI_Comm comm_;
  int size_ = 1;
};

}  // namespace ringsync::bench
