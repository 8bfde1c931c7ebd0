// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, in segments. Every non-root rank
// forwards segment k while segment k+1 is arriving, so T ~ S·beta + (n-2)·segment·beta + (n-1)·alpha:
// for large S every link carries S once, the bandwidth limit of a broadcast.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "ring_allreduce.h"
#include "transport.h"

namespace ringsync::detail {

void chainBroadcast(MPI_Comm comm, int rank, int size, void* buf, std::size_t bytes, int root,
                    const RingConfig& config, Deadline& deadline);

}  // namespace ringsync::detail
