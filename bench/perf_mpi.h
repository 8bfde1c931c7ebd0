// The baseline: Open MPI's own MPI_Allreduce / MPI_Bcast on host buffers, for any ringsync
// DataType and ReduceOp. MPI counts are int, so large counts are split into pieces; float16 and
// bfloat16 get user-defined ops (widen to float32, reduce, round once, as ringsync does); avg is
// MPI_SUM followed by one division, since MPI has no average.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "ringsync/types.h"

namespace ringsync::bench {

class MpiBaseline {
 public:
  explicit MpiBaseline(MPI_Comm comm);
  ~MpiBaseline();  // frees the user-defined ops and types; never throws
  MpiBaseline(const MpiBaseline&) = delete;
  MpiBaseline& operator=(const MpiBaseline&) = delete;

  // send == recv means in place (MPI_IN_PLACE).
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) const;
  void broadcast(void* buf, std::size_t count, DataType type, int root) const;

 private:
  MPI_Datatype mpiType(DataType type) const;
  MPI_Op mpiOp(DataType type, ReduceOp op) const;

  MPI_Comm comm_;
  int size_ = 1;
  MPI_Datatype half_ = MPI_DATATYPE_NULL;      // 2-byte element for both 16-bit float formats
  MPI_Op halfOps_[2][4] = {};                  // [float16, bfloat16][sum, prod, min, max]
};

}  // namespace ringsync::bench
