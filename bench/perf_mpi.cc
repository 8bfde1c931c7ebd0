#include "perf_mpi.h"

#include <algorithm>
#include <cstddef>

#include "collectives/mpi_allreduce.h"
#include "collectives/mpi_check.h"

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
    RINGSYNC_CHECK_MPI(MPI_Bcast(static_cast<std::byte*>(buf) + offset * elementBytes, piece,
                                 detail::mpiDatatype(type), root, comm_));
  }
}

}  // namespace ringsync::bench
