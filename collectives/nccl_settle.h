// ringsync's NCCL communicators are non-blocking (ncclConfig_t.blocking = 0): ncclCommInitRankConfig
// returns at once, and init and any later call may answer ncclInProgress, after which NCCL requires
// polling ncclCommGetAsyncError until the state settles before the next NCCL call. The poll runs
// under the call's deadline, so a peer that fails or dies inside NCCL's init becomes a
// TimeoutError on the others instead of leaving them blocked inside ncclCommInitRank forever.
#pragma once

#include <functional>

#include <nccl.h>

#include "transport.h"

namespace ringsync::detail {

// Polls `state` while it answers ncclInProgress, idling under `deadline` (TimeoutError naming
// `waitingFor` when it expires); returns the settled state (ncclSuccess or NCCL's error).
ncclResult_t awaitNcclSettled(const std::function<ncclResult_t()>& state, Deadline& deadline, const char* waitingFor);

// The same for a communicator: its ncclCommGetAsyncError (a failing query is its own error).
ncclResult_t awaitNcclSettled(ncclComm_t comm, Deadline& deadline, const char* waitingFor);

}  // namespace ringsync::detail
