// Memory that MPI may still write after ringsync gave up on a call. After a TimeoutError the call's
// receives cannot all be stopped: ringsync's core cancels what it can and keeps its own scratch,
// but a receive already matched, or an MPI collective (which MPI cannot cancel at all), may still
// complete into the tensors the call was given. Those tensors (their storage, or the private
// copies ringsync worked on) are handed here and kept until the process ends, so that a late write
// lands in memory nobody else was given. The user's tensor objects may be dropped safely; their
// values are undefined and may still change.
#pragma once

#include <memory>

namespace ringsync::torch_backend {

// Keeps `holder` (and whatever it owns: tensors, a job's closure) alive until the process ends.
void keepUntilExit(std::shared_ptr<const void> holder);

}  // namespace ringsync::torch_backend
