// The all-reduce handed to the MPI library (RINGSYNC_ALGO=mpi): MPI_Allreduce on the communicator.
// Never chosen automatically: it is the baseline that puts MPI's own algorithm inside the very
// program being measured (the GradientAverager's buckets and overlap, the trainer), where
// allreduce_perf's --compare mpi can only time the bare call; and, as Horovod's
// HOROVOD_CPU_OPERATIONS=mpi, a way out where the library's algorithm suits a network better.
//
// Why the blocking MPI_Allreduce and not MPI_Iallreduce polled under the deadline: Open MPI serves
// the non-blocking call with another component (libnbc), whose schedule moves only inside
// MPI_Test; in the trainer across two simulated hosts it took 0.68x of one host's samples/s where
// MPI_Allreduce (coll/tuned, what users compare against) took 0.75x (bench/RESULTS.md, section 13).
//
// Kept as everywhere: a round with the fingerprints goes first (MismatchError naming the ranks
// before MPI sees the call; a rank that never makes the call is a TimeoutError naming it), kAvg
// is the sum then one division, float16 and bfloat16 reduce with ringsync's own kernels (an MPI_Op
// over 16-bit words: MPI has no such types). Not kept: the deadline ends with that round (a peer
// that stops inside MPI_Allreduce is MPI's to detect: Open MPI ends the job when a process dies, a
// stopped one hangs there), and that the bits are the same on every rank is up to MPI's algorithm
// (Open MPI's give the same bits for these commutative operations; the standard only advises it).
#pragma once

#include <cstddef>

#include <mpi.h>

#include "algorithms.h"
#include "ringsync/types.h"

namespace ringsync::detail {

void mpiAllreduce(AlgorithmContext& context, const AllreduceArgs& args);

// The MPI call itself, also the benches' baseline (bench/perf_mpi.h): MPI_Allreduce in pieces of
// at most 2^30 elements (MPI counts are ints), send == recv in place; kAvg is MPI_SUM, then one
// division by `size` (integers truncate toward zero, as ringsync's average).
void allreduceThroughMpi(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, MPI_Comm comm,
                         int size);
// MPI's name for a DataType: float16 and bfloat16 travel as 16-bit words (MPI_UINT16_T), reduced
// by the user-defined ops of mpiReduceOp.
MPI_Datatype mpiDatatype(DataType type);
// The MPI_Op of `op` on `type` (kAvg: MPI_SUM). float16/bfloat16: ops made once per process with
// MPI_Op_create over ringsync's reduction kernels, so they round as ringsync does; never freed
// (a handful, and freeing them would need a hook before MPI_Finalize).
MPI_Op mpiReduceOp(DataType type, ReduceOp op);

}  // namespace ringsync::detail
