// The check that every rank of a group makes the same call before MPI sees it, for the collectives
// the backend hands to MPI (matched by order, like ringsync's own): one MPI_Iallgather of every
// rank's fingerprint, polled under the call's deadline. Ranks that disagree all raise the same
// MismatchError, naming each rank's call, and nothing is sent; a rank that never makes the call is
// a TimeoutError naming it. The call's sequence number is part of the fingerprint, so a rank that
// skipped a call is named too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "mpi_polling.h"

namespace ringsync::torch_backend {

struct CallFingerprint {
  std::int32_t kind = 0;    // c10d::OpType
  std::int32_t dtype = -1;  // at::ScalarType
  std::int32_t root = -1;   // -1: none
  std::int32_t op = -1;     // ringsync::ReduceOp, -1: none
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;  // elements, as the call defines them (the same on every rank)

  bool operator==(const CallFingerprint&) const = default;
};

std::string describe(const CallFingerprint& call);  // "gather #3 (root 0, torch.float32 x 4)"

// Every rank's fingerprint equal to `mine`, or MismatchError. TimeoutError at the deadline: the
// exchange's memory is then left to MPI (abandoned_memory.h).
void agreeOnCall(MPI_Comm comm, const CallFingerprint& mine, MpiDeadline& deadline);

// All-to-all's counts, after agreeOnCall: what this rank sends to each rank (sendCounts[r]) must be
// what rank r expects from it. MismatchError naming the first pair of ranks that disagree.
void agreeOnCounts(MPI_Comm comm, const std::vector<std::int64_t>& sendCounts,
                   const std::vector<std::int64_t>& recvCounts, MpiDeadline& deadline);

}  // namespace ringsync::torch_backend
