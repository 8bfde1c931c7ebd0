// The argument rules every collective's call passes before it touches a buffer or sends a byte,
// keyed by the call's kind. Each failure is an InvalidArgument whose message names the call, the
// argument and its value.
#pragma once

#include "collectives/call.h"

namespace ringsync::detail {

// - type (and op, for the reducing collectives) inside their enums;
// - count (times the ranks, for reduce-scatter and all-gather) within what an address space holds;
// - no null buffer with count > 0, no buffer wrapping around the address space;
// - broadcast: root in [0, size);
// - all-reduce: send and recv the same pointer (in place) or disjoint; reduce-scatter: recv
//   disjoint from send or exactly this rank's block of it; all-gather: send disjoint from recv or
//   exactly this rank's block of it.
void checkArguments(const Call& call, int rank, int size);

}  // namespace ringsync::detail
