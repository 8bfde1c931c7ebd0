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

MemoryKind checkMemory(const char* callName, MemoryKind send, MemoryKind recv, BackendChoice forced) {
  const std::string call = callName;
  if (send != recv)
    throw InvalidArgument(call + ": send is a " + memoryKindName(send) + " buffer but recv is a " +
                          memoryKindName(recv) + " buffer; both must be host or both device");
  if (send == MemoryKind::kHost && (forced == BackendChoice::kNccl || forced == BackendChoice::kStaged))
    throw BackendError(call + ": RINGSYNC_BACKEND=" + backendName(forced) +
                       " cannot serve a host buffer (it needs device memory)");
  if (send == MemoryKind::kDevice && forced == BackendChoice::kRing)
    throw InvalidArgument(call + ": device pointer where a host buffer is required (RINGSYNC_BACKEND=ring)");
  return send;
}

Route chooseRoute(const RouteInputs& in) {
  const std::string call = in.call;
  if (checkMemory(in.call, in.send, in.recv, in.forced) == MemoryKind::kHost) return Route::kHostRing;
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
