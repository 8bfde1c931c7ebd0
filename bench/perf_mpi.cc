// The benches' MPI baseline calls the same allreduceThroughMpi as RINGSYNC_ALGO=mpi, blocking. Where
// MPI's result would differ from ringsync's, the baseline's MPI_Op is ringsync's own kernel: float16
// and bfloat16 (MPI has no such types), and the sums of int8/uint8, because Open MPI's own 8-bit
// MPI_SUM saturates where its op/avx component vectorises (4.1 on AVX machines: 100 + 100 as int8
// is 127, not -56) while ringsync's wraps modulo 256 as documented. So an int8/uint8 sum or avg row
// times MPI's algorithm with a user-defined op, not Open MPI's vectorised built-in; the other
// 8-bit ops (prod, min, max) and every other type use MPI's built-in ops.
#include "perf_mpi.h"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <string>

#include "collectives/mpi_allreduce.h"
#include "collectives/mpi_check.h"
#include "collectives/reduce_kernels.h"
#include "ringsync/errors.h"

namespace ringsync::bench {

MpiBaseline::MpiBaseline(MPI_Comm comm) : comm_(comm) { RINGSYNC_CHECK_MPI(MPI_Comm_size(comm, &size_)); }

void MpiBaseline::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) const {
  detail::allreduceThroughMpi(send, recv, count, type, op, comm_, size_, /*deadline=*/nullptr);
}

void MpiBaseline::broadcast(void* buf, std::size_t count, DataType type, int root) const {
  constexpr std::size_t kMaxPieceElements = std::size_t{1} << 30;  // below MPI's INT_MAX count
  const std::size_t elementBytes = dataTypeSize(type);
  for (std::size_t offset = 0; offset < count; offset += kMaxPieceElements) {
    const int piece = static_cast<int>(std::min(kMaxPieceElements, count - offset));
    RINGSYNC_CHECK_MPI(
        MPI_Bcast(static_cast<std::byte*>(buf) + offset * elementBytes, piece, detail::mpiDatatype(type), root, comm_));
  }
}

namespace {
int mpiCount(std::size_t count, const char* call) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument(std::string(call) + ": the MPI baseline takes at most INT_MAX elements per block");
  return static_cast<int>(count);
}
}  // namespace

void MpiBaseline::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op) const {
  RINGSYNC_CHECK_MPI(MPI_Reduce_scatter_block(send, recv, mpiCount(recvCount, "MPI_Reduce_scatter_block"),
                                              detail::mpiDatatype(type), detail::mpiReduceOp(type, op), comm_));
  if (op == ReduceOp::kAvg) detail::divideElements(recv, recvCount, type, size_);
}

void MpiBaseline::allgather(const void* send, void* recv, std::size_t sendCount, DataType type) const {
  const int count = mpiCount(sendCount, "MPI_Allgather");
  RINGSYNC_CHECK_MPI(
      MPI_Allgather(send, count, detail::mpiDatatype(type), recv, count, detail::mpiDatatype(type), comm_));
}

}  // namespace ringsync::bench
