// The device layer, as seen by the Communicator core. Implemented in device_path_cuda.cc when
// the library is built with CUDA and NCCL, and in device_path_none.cc otherwise (every pointer is a
// host pointer there and no CUDA call exists at all).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <mpi.h>

#include "backend_selection.h"
#include "collectives/call.h"
#include "collectives/call_header.h"
#include "collectives/staging_memory.h"
#include "collectives/transport.h"
#include "logging.h"
#include "ringsync/options.h"
#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::detail {

// What the Communicator core needs of the device layer: the GPU of this rank, the NCCL
// communicator and staging memory (pointers are classified by classifyPointer() below). It holds no control flow of a
// collective: the core sequences, checks and composes (the staged path is src/staged_path.h, run by the core).
class DevicePath {
 public:
  virtual ~DevicePath() = default;

  virtual int device() const = 0;  // CUDA device used for this rank, -1 when none

  // Whether NCCL may serve device buffers is decided once, by every rank together, before the
  // first device collective is routed: decideNccl() is collective (it bootstraps NCCL or declines
  // it on every rank alike) and the core calls it only after the ranks agreed on the call.
  // With RINGSYNC_BACKEND=staged or ring nothing is to be decided (and NCCL is never touched).
  virtual bool ncclDecided() const = 0;
  // Waits under the deadline of the call that decides it (one deadline per call, whatever it waits on).
  virtual void decideNccl(Deadline& deadline) = 0;
  virtual bool ncclUsable(std::string* whyNot) const = 0;

  // NCCL runs the call: enqueued on call.stream (nullptr: the legacy default stream, then
  // synchronised under the call's deadline).
  virtual void ncclRun(const Call& call, Deadline& deadline) = 0;

  // Pinned host memory and the copies for the staged path; BackendError without CUDA.
  virtual StagingMemory& staging() = 0;

  // After a failure: abort NCCL (ncclCommAbort) so nothing waits on it, and keep the staging memory
  // for good (receives the failed call abandoned may still write it). Never throws.
  virtual void abort() noexcept = 0;
};

// The one pointer classifier (the core and the GradientAverager use it). Makes no CUDA call in a
// process without a GPU driver, or in a build without CUDA. With CUDA it asks the driver, which
// creates no context (cuda/driver_api.h): host while the process has no CUDA context at all; else
// only a successful query answering unknown or pinned host memory means host, and an error is a
// BackendError naming the pointer (never silently "host", which would send device memory to the
// host ring). The rules: pointer_rules.h.
MemoryKind classifyPointer(const void* pointer);
// ... and, for device memory, the GPU it lives on (-1 for host memory).
struct PointerPlace {
  MemoryKind kind = MemoryKind::kHost;
  int device = -1;
};
PointerPlace describePointer(const void* pointer);

struct DevicePathContext {
  MPI_Comm comm;  // the Communicator's duplicated communicator (for the ncclUniqueId broadcast)
  int rank;
  int size;
  int localRank;
  const Options* options;
  const Logger* logger;
};

std::unique_ptr<DevicePath> makeDevicePath(const DevicePathContext& context);

}  // namespace ringsync::detail
