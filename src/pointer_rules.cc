#include "pointer_rules.h"

#include <cstdint>

#include "ringsync/errors.h"

namespace ringsync::detail {

PointerPlace placeFromDriver(const void* pointer, bool anyContext, const std::function<DriverPointerAnswer()>& ask) {
  if (!anyContext) return {MemoryKind::kHost, -1};
  const std::string name = "pointer " + std::to_string(reinterpret_cast<std::uintptr_t>(pointer));
  const DriverPointerAnswer answer = ask();
  if (!answer.succeeded)
    throw BackendError("cannot tell whether " + name +
                       " is host or device memory: cuPointerGetAttributes failed: " + answer.error);
  switch (answer.memoryType) {
    case kDriverMemoryUnknown:
    case kDriverMemoryHost: return {MemoryKind::kHost, -1};
    case kDriverMemoryDevice:
    case kDriverMemoryUnified:
      if (answer.deviceOrdinal < 0)
        throw BackendError(name + " is device memory, but the driver named no device for it");
      return {MemoryKind::kDevice, answer.deviceOrdinal};
    case kDriverMemoryArray:
      throw InvalidArgument(name + " is a CUDA array, not linear memory: pass a buffer from cudaMalloc");
  }
  throw BackendError(name + ": unknown CUmemorytype " + std::to_string(answer.memoryType));
}

}  // namespace ringsync::detail
