#include "nccl_communicator.h"

#include <string>

#include "cuda/cuda_check.h"
#include "cuda/elementwise_kernels.h"
#include "nccl_check.h"
#include "nccl_settle.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

ncclDataType_t ncclTypeOf(DataType type) {
  switch (type) {
    case DataType::kInt8: return ncclInt8;
    case DataType::kUInt8: return ncclUint8;
    case DataType::kInt32: return ncclInt32;
    case DataType::kUInt32: return ncclUint32;
    case DataType::kInt64: return ncclInt64;
    case DataType::kUInt64: return ncclUint64;
    case DataType::kFloat16: return ncclFloat16;
    case DataType::kBFloat16: return ncclBfloat16;
    case DataType::kFloat32: return ncclFloat32;
    case DataType::kFloat64: return ncclFloat64;
  }
  throw InvalidArgument("NCCL: type=" + std::to_string(static_cast<int>(type)) + " is not a DataType");
}

ncclRedOp_t ncclOpOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kProd: return ncclProd;
    case ReduceOp::kMin: return ncclMin;
    case ReduceOp::kMax: return ncclMax;
    case ReduceOp::kAvg: return ncclSum;  // then divide(): see run()
  }
  throw InvalidArgument("NCCL: op=" + std::to_string(static_cast<int>(op)) + " is not a ReduceOp");
}

NcclCommunicator::NcclCommunicator(ncclComm_t comm, int device, double timeoutSeconds)
    : comm_(comm), device_(device), timeoutSeconds_(timeoutSeconds) {}

// Finalize (non-blocking: it flushes what is still queued) under the usual timeout, then destroy;
// a finalize that does not settle (a peer gone) aborts instead, so the destructor cannot hang.
NcclCommunicator::~NcclCommunicator() {
  if (!comm_) return;
  try {
    ncclResult_t rc = ncclCommFinalize(comm_);
    if (rc == ncclInProgress) {
      Deadline deadline(CallHeader{}, timeoutSeconds_, 0, {});
      rc = awaitNcclSettled(comm_, deadline, "ncclCommFinalize");
    }
    if (rc == ncclSuccess) {
      ncclCommDestroy(comm_);
      return;
    }
  } catch (const Error&) {  // the finalize timed out
  }
  ncclCommAbort(comm_);
}

void NcclCommunicator::settle(ncclResult_t rc, const char* call, Deadline& deadline) const {
  if (rc == ncclInProgress) rc = awaitNcclSettled(comm_, deadline, call);
  if (rc != ncclSuccess) throw BackendError(std::string(call) + " failed: " + ncclErrorText(rc));
}

void NcclCommunicator::abort() noexcept {
  if (!comm_) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::ensureHealthy(const char* call) const {
  if (!comm_) throw BackendError(std::string(call) + ": the NCCL communicator was aborted after an earlier failure");
  ncclResult_t state = ncclSuccess;
  RINGSYNC_CHECK_NCCL(ncclCommGetAsyncError(comm_, &state));
  if (state != ncclSuccess && state != ncclInProgress)
    throw BackendError(std::string(call) + ": NCCL reported an asynchronous error: " + ncclErrorText(state));
}

// Waits for the legacy default stream without blocking in cudaStreamSynchronize: a peer that died
// leaves NCCL's kernel spinning forever, and only polling (plus ncclCommAbort by the caller's
// abort-on-failure rule) gets the process out of it.
void NcclCommunicator::finish(const char* call, cudaStream_t stream, Deadline& deadline) const {
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) RINGSYNC_CHECK_CUDA(state);
    // "Not ready" is recorded as the thread's last error: clear it, or the next launch check
    // anywhere (ours, the trainer's, PyTorch's) reports it as a failure of its own.
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();
    ensureHealthy(call);
    deadline.idleWaitingFor("NCCL's kernel on the default stream (a peer that stopped leaves it spinning)");
  }
}

void NcclCommunicator::enqueue(const Call& call, Deadline& deadline) {
  const ncclDataType_t type = ncclTypeOf(call.type);
  cudaStream_t stream = call.stream;
  switch (call.kind) {
    case CollectiveKind::kAllreduce:
      settle(ncclAllReduce(call.send, call.recv, call.count, type, ncclOpOf(call.op), comm_, stream), "ncclAllReduce",
             deadline);
      return;
    case CollectiveKind::kReduceScatter:
      settle(ncclReduceScatter(call.send, call.recv, call.count, type, ncclOpOf(call.op), comm_, stream),
             "ncclReduceScatter", deadline);
      return;
    case CollectiveKind::kAllgather:
      settle(ncclAllGather(call.send, call.recv, call.count, type, comm_, stream), "ncclAllGather", deadline);
      return;
    case CollectiveKind::kBroadcast:
      settle(ncclBroadcast(call.send, call.recv, call.count, type, call.root, comm_, stream), "ncclBroadcast",
             deadline);
      return;
    case CollectiveKind::kBarrier: break;
  }
  throw InvalidArgument(std::string("NCCL: ") + collectiveName(call.kind) + " is not a collective NCCL runs here");
}

void NcclCommunicator::run(const Call& call, Deadline& deadline) {
  const char* name = collectiveName(call.kind);
  ensureHealthy(name);
  if (call.count == 0) return;  // every rank has the same count (fingerprinted): all skip alike
  enqueue(call, deadline);
  if (call.reduces() && call.op == ReduceOp::kAvg) {
    // ncclAvg pre-multiplies by fl(1/n) (for halves a factor rounded to 11 bits), which is not the
    // host path's fl(sum)/n for n = 3, 5, 6, ...: sum, then divide once on the same stream, so every
    // backend gives the same bits (integers truncate toward zero, as on the host).
    int ranks = 1;
    RINGSYNC_CHECK_NCCL(ncclCommCount(comm_, &ranks));
    if (ranks > 1) cuda::divide(call.recv, call.recv, call.count, call.type, ranks, call.stream);
  }
  if (call.stream == nullptr) finish(name, call.stream, deadline);
}

}  // namespace ringsync::detail
