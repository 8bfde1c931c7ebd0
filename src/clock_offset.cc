#include "clock_offset.h"

#include <chrono>
#include <limits>

#include "collectives/mpi_check.h"
#include "collectives/mpi_tags.h"

namespace ringsync::detail {
namespace {
constexpr int kPingPongs = 8;
}  // namespace

std::int64_t steadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::int64_t clockOffsetToRankZero(MPI_Comm comm, int rank, int size, bool allOnOneNode) {
  if (allOnOneNode || size == 1) return 0;
  std::int64_t offset = 0;
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer) {
      std::int64_t bestRoundTrip = std::numeric_limits<std::int64_t>::max(), bestOffset = 0;
      for (int i = 0; i < kPingPongs; ++i) {
        std::int64_t theirs = 0;
        const std::int64_t sent = steadyNowNs();
        RINGSYNC_CHECK_MPI(MPI_Send(&sent, 1, MPI_INT64_T, peer, kTagClock, comm));
        RINGSYNC_CHECK_MPI(MPI_Recv(&theirs, 1, MPI_INT64_T, peer, kTagClock, comm, MPI_STATUS_IGNORE));
        const std::int64_t received = steadyNowNs();
        if (received - sent < bestRoundTrip) {
          bestRoundTrip = received - sent;
          bestOffset = sent + (received - sent) / 2 - theirs;  // rank 0's time minus the peer's
        }
      }
      RINGSYNC_CHECK_MPI(MPI_Send(&bestOffset, 1, MPI_INT64_T, peer, kTagClock, comm));
    }
  } else {
    for (int i = 0; i < kPingPongs; ++i) {
      std::int64_t ping = 0;
      RINGSYNC_CHECK_MPI(MPI_Recv(&ping, 1, MPI_INT64_T, 0, kTagClock, comm, MPI_STATUS_IGNORE));
      const std::int64_t now = steadyNowNs();
      RINGSYNC_CHECK_MPI(MPI_Send(&now, 1, MPI_INT64_T, 0, kTagClock, comm));
    }
    RINGSYNC_CHECK_MPI(MPI_Recv(&offset, 1, MPI_INT64_T, 0, kTagClock, comm, MPI_STATUS_IGNORE));
  }
  return offset;
}

}  // namespace ringsync::detail
