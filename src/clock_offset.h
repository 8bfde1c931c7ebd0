// One time base for every rank: the steady clock, shifted so that all ranks read (nearly) the same
// value at the same instant. Arrival times from different ranks are compared (who came last, how
// long the others waited) and the timeline merges every rank's events on one axis; both need it.
#pragma once

#include <cstdint>

#include <mpi.h>

namespace ringsync::detail {

// Nanoseconds of std::chrono::steady_clock on this host.
std::int64_t steadyNowNs();

// Added to steadyNowNs() to get rank 0's time. Collective over `comm`. Ranks on one host share the
// kernel's monotonic clock (0, no message); across hosts rank 0 exchanges a few ping-pongs with each
// rank and keeps the sample with the shortest round trip (error at most half of it, ~10-30 us on
// Ethernet). `allOnOneNode` must be the same on every rank.
std::int64_t clockOffsetToRankZero(MPI_Comm comm, int rank, int size, bool allOnOneNode);

}  // namespace ringsync::detail
