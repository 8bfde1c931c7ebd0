// The backend's few blocking waits outside a collective (shutdown, the destructor, split_group's
// meeting, monitored_barrier) go through a hook that the embedding program may set: the Python
// extension sets one that releases the GIL around the wait, since the wait may be for a
// completion that runs a Python callback, which needs it. Without a hook the wait runs as it is:
// the backend itself never touches Python.
#pragma once

#include <functional>

namespace ringsync::torch_backend {

// Runs `wait` (always, exactly once), letting it throw through.
using BlockingWaitHook = void (*)(const std::function<void()>& wait);

// Installs `hook` for every backend of the process (nullptr: none). Set once, before any backend
// is made (the Python extension does it when it is imported).
void setBlockingWaitHook(BlockingWaitHook hook);

// Runs `wait` through the hook, or directly without one.
void blockingWait(const std::function<void()>& wait);

}  // namespace ringsync::torch_backend
