// The NCCL path for device buffers: one ncclComm_t over the ranks of the Communicator's MPI
// communicator, bootstrapped through MPI (rank 0's ncclUniqueId travels by MPI_Bcast), used for
// the call's collective on the caller's stream (ncclAllReduce, ncclReduceScatter, ncclAllGather,
// ncclBroadcast), aborted on failure, destroyed at the end.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include "call.h"
#include "ringsync/types.h"
#include "transport.h"

namespace ringsync::detail {

ncclDataType_t ncclTypeOf(DataType type);
ncclRedOp_t ncclOpOf(ReduceOp op);  // kAvg is ncclSum: the division follows, on the same stream

class NcclCommunicator {
 public:
  // Owns `comm` (created non-blocking by bootstrapNccl on `device`, nccl_settle.h); `timeoutSeconds`
  // bounds the finalize in the destructor.
  NcclCommunicator(ncclComm_t comm, int device, double timeoutSeconds);
  ~NcclCommunicator();  // finalize + destroy, or abort when that does not settle; never throws

  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  // The call's collective, enqueued on call.stream (kAvg: the sum, then one division on the same
  // stream). With no stream the call runs on the legacy default stream and returns once it
  // completed, polling under the call's `deadline` (the one its fingerprint round used), so that a
  // stuck peer turns into a TimeoutError instead of a hang. BackendError carries NCCL's own text.
  void run(const Call& call, Deadline& deadline);

  // ncclCommAbort: nothing waits on this communicator any more. Later calls raise BackendError.
  void abort() noexcept;
  bool aborted() const { return comm_ == nullptr; }
  int device() const { return device_; }

 private:
  void enqueue(const Call& call, Deadline& deadline);  // the NCCL call itself
  void ensureHealthy(const char* call) const;          // raises on an earlier abort or an async NCCL error
  void finish(const char* call, cudaStream_t stream, Deadline& deadline) const;
  // A call's result on the non-blocking communicator: ncclInProgress is polled until it settles.
  void settle(ncclResult_t rc, const char* call, Deadline& deadline) const;

  ncclComm_t comm_;
  int device_;
  double timeoutSeconds_;
};

struct NcclBootstrapInputs {
  MPI_Comm comm;  // the Communicator's duplicated communicator
  int rank;
  int size;
  int device;             // CUDA device for this rank, -1 when it has none
  std::string deviceWhy;  // why device is -1 (for the message every rank reports)
  Deadline* deadline;     // the first device call's: every MPI exchange waits under it
};

// Collective over inputs.comm. Either every rank gets a communicator, or every rank gets nullptr
// and the same `whyNot` ("rank 1 has no CUDA device", "ranks 0 and 1 share GPU ...: NCCL needs
// one GPU per rank", "ncclCommInitRankConfig failed on rank 2: ..."). TimeoutError when a peer never
// joins (for instance because it passed host buffers to this collective).
std::unique_ptr<NcclCommunicator> bootstrapNccl(const NcclBootstrapInputs& inputs, std::string* whyNot);

}  // namespace ringsync::detail
