// Device-buffer collectives, as seen by the Communicator. Implemented in device_path_cuda.cc when
// the library is built with CUDA and NCCL, and in device_path_none.cc otherwise (every pointer is a
// host pointer there and no CUDA call exists at all).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <mpi.h>

#include "backend_selection.h"
#include "logging.h"
#include "ringsync/options.h"
#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::detail {

// What the staged path runs between its copies: the Communicator's own host collectives, with
// their checks, deadlines and sequence numbers.
class HostCollectives {
 public:
  virtual ~HostCollectives() = default;
  virtual void hostAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void hostBroadcast(void* buf, std::size_t count, DataType type, int root) = 0;
};

class DevicePath {
 public:
  virtual ~DevicePath() = default;

  // Host or device memory. Makes no CUDA call when the process has no GPU.
  virtual MemoryKind classify(const void* pointer) = 0;
  // Whether NCCL can serve device buffers in this process; if not, why (for error messages).
  virtual bool ncclUsable(std::string* whyNot) = 0;
  virtual int device() const = 0;  // CUDA device used for this rank, -1 when none

  // NCCL: enqueued on `stream` (nullptr: the legacy default stream, then synchronised).
  virtual void ncclAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CUstream_st* stream) = 0;
  virtual void ncclBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) = 0;

  // Staged: device -> pinned host -> host collective -> device, ordered on `stream`.
  virtual void stagedAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                               CUstream_st* stream, HostCollectives& host) = 0;
  virtual void stagedBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream,
                               HostCollectives& host) = 0;

  // After a failure: abort NCCL (ncclCommAbort) so nothing waits on it. Never throws.
  virtual void abort() noexcept = 0;
};

struct DevicePathContext {
  MPI_Comm comm;   // the Communicator's duplicated communicator (for the ncclUniqueId broadcast)
  int rank;
  int size;
  int localRank;
  const Options* options;
  const Logger* logger;
};

std::unique_ptr<DevicePath> makeDevicePath(const DevicePathContext& context);

}  // namespace ringsync::detail
