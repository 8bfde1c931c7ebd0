// All-gather by direct exchange: every rank sends its block to every peer and receives each
// peer's block straight into place. n-1 messages each way; fine for the sizes ringsync gathers
// (fingerprints, checksums, small metadata), not meant for bulk data.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "transport.h"

namespace ringsync::detail {

void directAllgather(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t bytesPerRank,
                     Deadline& deadline);

}  // namespace ringsync::detail
