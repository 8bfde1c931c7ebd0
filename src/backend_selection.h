// The one place that decides where a collective runs (soft placement, like TensorFlow's
// allow_soft_placement): host buffers always take the host ring; device buffers take NCCL when it
// can serve them, otherwise the staged path. RINGSYNC_BACKEND forces a choice.
#pragma once

#include <string>

#include "ringsync/options.h"

namespace ringsync::detail {

enum class MemoryKind { kHost, kDevice };
enum class Route { kHostRing, kNccl, kStaged };

const char* routeName(Route route);
const char* memoryKindName(MemoryKind kind);

struct RouteInputs {
  const char* call;            // "allreduce", for messages
  MemoryKind send;
  MemoryKind recv;
  BackendChoice forced;
  bool ncclUsable;
  std::string ncclUnusableWhy;  // when !ncclUsable
};

// Raises InvalidArgument for a host/device mix or a device buffer where a host one is required,
// and BackendError when a forced backend cannot serve the buffers (naming it).
Route chooseRoute(const RouteInputs& inputs);

}  // namespace ringsync::detail
