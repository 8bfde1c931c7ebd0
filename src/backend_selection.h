// The one place that decides where a collective runs (soft placement, like TensorFlow's
// allow_soft_placement): host buffers always take the host ring; device buffers take NCCL when it
// can serve them, otherwise the staged path. RINGSYNC_BACKEND forces a choice.
#pragma once

#include <string>

#include "collectives/call_header.h"
#include "ringsync/options.h"

namespace ringsync::detail {

enum class Route { kHostRing, kNccl, kStaged };

const char* routeName(Route route);

struct RouteInputs {
  const char* call;  // "allreduce", for messages
  MemoryKind send;
  MemoryKind recv;
  BackendChoice forced;
  bool ncclUsable;
  std::string ncclUnusableWhy;  // when !ncclUsable
};

// Raises InvalidArgument for a host/device mix or a device buffer where a host one is required,
// and BackendError when a forced backend cannot serve the buffers (naming it). Makes no collective
// call: for device buffers under RINGSYNC_BACKEND=auto|nccl, `ncclUsable` must be decided already
// (DevicePath::decideNccl); checkMemory() runs the same rejections before anything is sent.
Route chooseRoute(const RouteInputs& inputs);

// The rejections of chooseRoute that need no NCCL decision (mixed buffers, forced backends that
// cannot serve this memory): run before the call's first byte is sent. Returns the memory kind.
MemoryKind checkMemory(const char* call, MemoryKind send, MemoryKind recv, BackendChoice forced);

}  // namespace ringsync::detail
