#include "nccl_settle.h"

namespace ringsync::detail {

ncclResult_t awaitNcclSettled(const std::function<ncclResult_t()>& state, Deadline& deadline, const char* waitingFor) {
  for (;;) {
    const ncclResult_t now = state();
    if (now != ncclInProgress) return now;
    deadline.idleWaitingFor(waitingFor);
  }
}

ncclResult_t awaitNcclSettled(ncclComm_t comm, Deadline& deadline, const char* waitingFor) {
  return awaitNcclSettled(
      [comm] {
        ncclResult_t state = ncclSuccess;
        const ncclResult_t query = ncclCommGetAsyncError(comm, &state);
        return query != ncclSuccess ? query : state;
      },
      deadline, waitingFor);
}

}  // namespace ringsync::detail
