// The backend's blocking-wait hook in Python (blocking_wait.h, installed when the module is
// imported): waits in the backend's lifetime calls (shutdown, the destructor, split_group,
// monitored_barrier) run without the GIL, since the wait may be for a completion that runs a
// Python callback, which needs it. Everything else in the backend never touches Python.
#pragma once

#include <functional>

namespace ringsync::torch_backend {

// Runs `wait`, releasing the GIL first when this thread holds it.
void withoutGil(const std::function<void()>& wait);

}  // namespace ringsync::torch_backend
