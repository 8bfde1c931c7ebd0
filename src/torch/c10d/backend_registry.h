// Every backend made (by the Python extension, or by a split of any group) is registered weakly, so
// that the Python package can shut them all down at exit, before ringsync finalises MPI (torch keeps
// process groups alive until after the interpreter is gone).
#pragma once

#include <c10/util/intrusive_ptr.h>

namespace ringsync::torch_backend {

class RingsyncBackend;

// Thread-safe. Holds a weak reference only: registering never extends a backend's life.
void registerBackend(const c10::intrusive_ptr<RingsyncBackend>& backend);

// shutdown() on every registered backend still alive (blocking, see RingsyncBackend::shutdown).
void shutdownRegisteredBackends();

}  // namespace ringsync::torch_backend
