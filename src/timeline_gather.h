// Bringing every process's timeline into one file when MPI finalizes (timeline.h).
//
// The design: each process keeps one timeline for all its communicators, and the processes' parts
// meet once, at MPI_Finalize, in world rank 0, labelled by world rank. Who takes part is learnt
// when communicators are built, so that nobody waits for a process that will not answer:
//   - every rank of a communicator on which some rank records calls joinTimelineMerge with the
//     communicator's world ranks (CallTracer::start, where the ranks agree on it);
//   - the first such call registers a callback MPI runs at the very start of MPI_Finalize (an
//     attribute of MPI_COMM_SELF, which MPI deletes first, while everything still works);
//   - there, world rank 0 takes a part (empty where a rank records nothing) from every world rank
//     it shared such a communicator with, and writes the file at its RINGSYNC_TIMELINE (or, when
//     it records nothing itself, at the lowest sender's); every rank that shared one with world
//     rank 0 sends its part; a rank that recorded but shared none with world rank 0 writes its own
//     part to PATH.rank<r> and says so. Point-to-point on MPI_COMM_WORLD (the program communicates
//     no more by then), every wait bounded by RINGSYNC_TIMEOUT_SECONDS + 10 s (a rank may reach
//     MPI_Finalize a whole deadline late, after a failed call): a part that cannot be delivered
//     stays in its rank's own PATH.rank<r>, which a warning names.
// Why not when the last communicator ends, as before: processes end their communicators in
// different orders (torch's shutdown_all ends groups in creation order), a communicator that
// leaves world rank 0 out cannot bring its calls to it, and calls of communicators that had ended
// before the last one was made were lost.
#pragma once

#include <cstdint>
#include <vector>

#include "ringsync/options.h"

namespace ringsync::detail {

// This process is a rank of a communicator (holding `worldRanks`, in its rank order) on which some
// rank records. `mergeSeconds` bounds the waits at MPI_Finalize; `logLevel` says how loudly.
void joinTimelineMerge(const std::vector<int>& worldRanks, double mergeSeconds, LogLevel logLevel);

// What turns this host's steady clock into world rank 0's, learnt from the first communicator
// shared with world rank 0 (the first one known is kept); 0 until then.
void setClockShiftToWorldRankZero(std::int64_t shiftNs);
std::int64_t clockShiftToWorldRankZero();

}  // namespace ringsync::detail
