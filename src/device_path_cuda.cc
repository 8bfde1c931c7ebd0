// The device path of a CUDA build: pointer classification, the lazily bootstrapped NCCL
// communicator, and the staged path through pinned host memory.
//
// Host buffers stay cheap and CUDA-free: without an NVIDIA driver on the machine classify() never
// calls the CUDA runtime (device_probe.h); with one it costs one cudaPointerGetAttributes.
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "collectives/nccl_communicator.h"
#include "collectives/staged_cuda.h"
#include "device_path.h"
#include "device_probe.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

class CudaDevicePath final : public DevicePath {
 public:
  explicit CudaDevicePath(const DevicePathContext& context) : context_(context) {}

  bool ncclDecided() const override { return ncclForcedOff() || state_ != NcclState::kUnknown; }
  void decideNccl(Deadline& deadline) override;
  bool ncclUsable(std::string* whyNot) const override;
  int device() const override;

  void ncclAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                     CUstream_st* stream, Deadline& deadline) override {
    nccl("allreduce").allreduce(send, recv, count, type, op, stream, deadline);
  }
  void ncclBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream,
                     Deadline& deadline) override {
    nccl("broadcast").broadcast(buf, count, type, root, stream, deadline);
  }

  StagingMemory& staging() override {
    if (!staging_) staging_ = std::make_unique<CudaStagingMemory>();
    return *staging_;
  }

  void abort() noexcept override {
    if (nccl_) nccl_->abort();
  }

 private:
  enum class NcclState { kUnknown, kReady, kUnusable };

  int chooseDevice(std::string* why) const;
  // RINGSYNC_BACKEND=staged or ring: the route is decided without NCCL.
  bool ncclForcedOff() const {
    return context_.options->backend == BackendChoice::kStaged || context_.options->backend == BackendChoice::kRing;
  }
  NcclCommunicator& nccl(const char* call) {
    if (!nccl_) throw BackendError(std::string(call) + ": the NCCL path was chosen before NCCL was bootstrapped");
    return *nccl_;
  }
  DevicePathContext context_;
  NcclState state_ = NcclState::kUnknown;
  std::string ncclWhy_;
  std::unique_ptr<NcclCommunicator> nccl_;
  std::unique_ptr<CudaStagingMemory> staging_;
};

// RINGSYNC_CUDA_DEVICE when set, else the rank's local rank (modulo the GPUs it can see, so that
// more ranks than GPUs on a node still get a device: then they share one, and NCCL is declined).
int CudaDevicePath::chooseDevice(std::string* why) const {
  const int count = visibleGpuCount();
  if (count == 0) {
    *why = gpuDriverPresent() ? "no CUDA device visible (cudaGetDeviceCount)" : "no NVIDIA driver on this machine";
    return -1;
  }
  const int wanted = context_.options->cudaDevice;
  if (wanted >= count) {
    *why = "RINGSYNC_CUDA_DEVICE=" + std::to_string(wanted) + " but only " + std::to_string(count) + " GPU(s) are visible";
    return -1;
  }
  return wanted >= 0 ? wanted : context_.localRank % count;
}

int CudaDevicePath::device() const {
  std::string why;
  return chooseDevice(&why);
}

bool CudaDevicePath::ncclUsable(std::string* whyNot) const {
  if (ncclForcedOff()) {
    if (whyNot) *whyNot = std::string("RINGSYNC_BACKEND=") + backendName(context_.options->backend);
    return false;
  }
  if (state_ == NcclState::kReady) return true;
  if (whyNot) *whyNot = state_ == NcclState::kUnknown ? "NCCL was not decided yet" : ncclWhy_;
  return false;
}

// Collective: every rank reaches it on the same call (its first device-buffer collective), after
// the call's fingerprints matched.
void CudaDevicePath::decideNccl(Deadline& deadline) {
  if (ncclDecided()) return;
  NcclBootstrapInputs inputs{context_.comm, context_.rank, context_.size, -1, {}, &deadline};
  inputs.device = chooseDevice(&inputs.deviceWhy);
  try {
    nccl_ = bootstrapNccl(inputs, &ncclWhy_);
  } catch (const Error& error) {
    state_ = NcclState::kUnusable;
    ncclWhy_ = std::string("the NCCL bootstrap failed: ") + error.what();
    throw;
  }
  state_ = nccl_ ? NcclState::kReady : NcclState::kUnusable;
  if (nccl_) {
    context_.logger->info("device buffers: NCCL communicator of " + std::to_string(context_.size) + " ranks on device " +
                          std::to_string(inputs.device));
  } else {
    context_.logger->info("device buffers: NCCL not usable (" + ncclWhy_ + "); they take the staged path");
  }
}

}  // namespace

MemoryKind classifyPointer(const void* pointer) { return describePointer(pointer).kind; }

PointerPlace describePointer(const void* pointer) {
  if (pointer == nullptr || visibleGpuCount() == 0) return {MemoryKind::kHost, -1};
  cudaPointerAttributes attributes{};
  const cudaError_t status = cudaPointerGetAttributes(&attributes, pointer);
  if (status != cudaSuccess) {
    cudaGetLastError();  // this query's own error only: it is not sticky, and it is reported here
    throw BackendError("cannot tell whether pointer " + std::to_string(reinterpret_cast<std::uintptr_t>(pointer)) +
                       " is host or device memory: cudaPointerGetAttributes failed: " + cudaGetErrorString(status));
  }
  switch (attributes.type) {
    case cudaMemoryTypeUnregistered:
    case cudaMemoryTypeHost: return {MemoryKind::kHost, -1};
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged: return {MemoryKind::kDevice, attributes.device};
  }
  throw BackendError("pointer " + std::to_string(reinterpret_cast<std::uintptr_t>(pointer)) +
                     ": unknown cudaMemoryType " + std::to_string(static_cast<int>(attributes.type)));
}

std::unique_ptr<DevicePath> makeDevicePath(const DevicePathContext& context) {
  return std::make_unique<CudaDevicePath>(context);
}

}  // namespace ringsync::detail
