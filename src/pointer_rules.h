// How a pointer is classified from what the CUDA driver answers, apart from the driver so that the
// rules are tested on machines without a GPU (tests/core/test_units.cc). device_path_cuda.cc feeds
// them the driver's answers.
#pragma once

#include <functional>
#include <string>

#include "device_path.h"

namespace ringsync::detail {

// The driver's CU_POINTER_ATTRIBUTE_MEMORY_TYPE values (CUmemorytype; 0: memory CUDA does not know).
enum DriverMemoryType : int {
  kDriverMemoryUnknown = 0,
  kDriverMemoryHost = 1,
  kDriverMemoryDevice = 2,
  kDriverMemoryArray = 3,
  kDriverMemoryUnified = 4,
};

// One cuPointerGetAttributes query (MEMORY_TYPE and DEVICE_ORDINAL).
struct DriverPointerAnswer {
  bool succeeded = false;
  std::string error;  // the driver's error, when it failed
  int memoryType = kDriverMemoryUnknown;
  int deviceOrdinal = -1;
};

// The rules:
//  - no CUDA context anywhere in the process (`anyContext` false): host, and the driver is not asked
//    (no device memory can exist, and asking must not create a context);
//  - the query failed: BackendError naming the pointer (never "host": that would send device memory
//    to the host ring);
//  - unknown (not CUDA's) or pinned host memory: host; device or managed memory: device, on the
//    ordinal the driver gives; a CUDA array is not a linear buffer: InvalidArgument.
PointerPlace placeFromDriver(const void* pointer, bool anyContext, const std::function<DriverPointerAnswer()>& ask);

}  // namespace ringsync::detail
