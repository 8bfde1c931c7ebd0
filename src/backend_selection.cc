#include "backend_selection.h"

#include "ringsync/errors.h"

namespace ringsync::detail {

const char* routeName(Route route) {
  switch (route) {
    case Route::kHostRing: return "host-ring";
    case Route::kNccl: return "nccl";
    case Route::kStaged: return "staged";
  }
  return "invalid";
}

const char* memoryKindName(MemoryKind kind) { return kind == MemoryKind::kHost ? "host" : "device"; }

Route chooseRoute(const RouteInputs& in) {
  const std::string call = in.call;
  if (in.send != in.recv)
    throw InvalidArgument(call + ": send is a " + memoryKindName(in.send) + " buffer but recv is a " +
                          memoryKindName(in.recv) + " buffer; both must be host or both device");
  if (in.send == MemoryKind::kHost) {
    if (in.forced == BackendChoice::kNccl || in.forced == BackendChoice::kStaged)
      throw BackendError(call + ": RINGSYNC_BACKEND=" + backendName(in.forced) +
                         " cannot serve a host buffer (it needs device memory)");
    return Route::kHostRing;
  }
  switch (in.forced) {
    case BackendChoice::kRing:
      throw InvalidArgument(call + ": device pointer where a host buffer is required (RINGSYNC_BACKEND=ring)");
    case BackendChoice::kNccl:
      if (!in.ncclUsable)
        throw BackendError(call + ": RINGSYNC_BACKEND=nccl cannot serve this device buffer: " + in.ncclUnusableWhy);
      return Route::kNccl;
    case BackendChoice::kStaged: return Route::kStaged;
    case BackendChoice::kAuto: return in.ncclUsable ? Route::kNccl : Route::kStaged;
  }
  throw InvalidArgument(call + ": unknown RINGSYNC_BACKEND value");
}

}  // namespace ringsync::detail
