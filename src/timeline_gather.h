// Bringing every rank's part of the timeline to rank 0, with a deadline: a peer that failed, or
// that ends on another communicator, must not keep the others from writing what they have.
#pragma once

#include <string>
#include <vector>

#include <mpi.h>

namespace ringsync::detail {

// Rank 0: fills `parts` (one per rank; "" for a rank whose part did not arrive in time) and returns
// how many arrived, its own included. Other ranks: send `mine` and return 1 if rank 0 took it in
// time, 0 otherwise (then the caller writes its part to a file of its own). Never throws.
int gatherTimelineParts(MPI_Comm comm, int rank, int size, const std::string& mine, double seconds,
                        std::vector<std::string>* parts) noexcept;

}  // namespace ringsync::detail
