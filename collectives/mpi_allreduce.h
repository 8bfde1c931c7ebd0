// The all-reduce handed to the MPI library (RINGSYNC_ALGO=mpi): MPI_Iallreduce on the
// communicator, polled under the call's deadline. Never chosen automatically: it is the baseline
// that puts MPI's own algorithm inside the very program being measured (the GradientAverager's
// buckets and overlap, the trainer), where allreduce_perf's --compare mpi can only time the bare
// call; and, as Horovod's HOROVOD_CPU_OPERATIONS=mpi, a way out where the library's algorithm
// suits a network better.
//
// Why not the blocking MPI_Allreduce, which Open MPI serves with its tuned algorithms (coll/tuned)
// where the non-blocking call gets libnbc's (binomial for an in-place call or fewer than 4 ranks:
// the trainer across two hosts made 0.68x of one host's samples/s with it against 0.75-0.79x,
// bench/RESULTS.md section 13): a blocking call cannot be given up. A rank whose deadline passes
// in the fingerprint round, just before a late peer arrives, raises TimeoutError and never calls
// MPI; the others, whose deadlines started later, would then block in MPI_Allreduce for good.
// Polled, they time out too. (`-x OMPI_MCA_coll_libnbc_iallreduce_algorithm=1` picks libnbc's ring.)
//
// Kept as everywhere: a round with the fingerprints goes first (MismatchError naming the ranks
// before MPI sees the call; a rank that never makes the call is a TimeoutError naming it), kAvg
// is the sum then one division, float16 and bfloat16 reduce with ringsync's own kernels (an MPI_Op
// over 16-bit words: MPI has no such types), so do int8 and uint8 sums (they wrap modulo 256;
// Open MPI's built-in 8-bit sum saturates where it vectorises), a peer that stops answering is a
// TimeoutError. Not kept: after a TimeoutError MPI may still write the receive buffer (a
// collective request cannot be cancelled; the communicator is aborted then), and that the bits are
// the same on every rank is up to MPI's algorithm (Open MPI's give the same bits for these
// commutative operations; the standard only advises it).
#pragma once

#include <cstddef>

#include <mpi.h>

#include "algorithm_context.h"
#include "call.h"
#include "ringsync/types.h"

namespace ringsync::detail {

void mpiAllreduce(AlgorithmContext& context, const Call& args);

// The MPI call itself, in pieces of at most 2^30 elements (MPI counts are ints), send == recv in
// place; kAvg is MPI_SUM, then one division by `size` (integers truncate toward zero, as ringsync's
// average). With a deadline MPI_Iallreduce polled under it; without, the blocking MPI_Allreduce
// (the benches' baseline, bench/perf_mpi.h: the bare call users compare against).
void allreduceThroughMpi(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, MPI_Comm comm,
                         int size, Deadline* deadline);
// MPI's name for a DataType: float16 and bfloat16 travel as 16-bit words (MPI_UINT16_T), reduced
// by the user-defined ops of mpiReduceOp.
MPI_Datatype mpiDatatype(DataType type);
// The MPI_Op of `op` on `type` (kAvg: MPI_SUM). float16/bfloat16, and the sums of int8/uint8:
// ops made once per process with MPI_Op_create over ringsync's reduction kernels, so they round
// and wrap as ringsync does (Open MPI's built-in 8-bit sum saturates: mpi_allreduce.cc); never
// freed (a handful, and freeing them would need a hook before MPI_Finalize).
MPI_Op mpiReduceOp(DataType type, ReduceOp op);

}  // namespace ringsync::detail
