// The device path of a CUDA build: pointer classification, the lazily bootstrapped NCCL
// communicator, and the staged path through pinned host memory.
//
// Host buffers stay cheap and CUDA-free: without an NVIDIA driver on the machine classify() never
// calls the CUDA runtime (device_probe.h); with one it asks the driver (cuda/driver_api.h), which
// creates no context: none at all while the process has no CUDA context, else one
// cuPointerGetAttributes.
#include <cstdint>
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "collectives/nccl_communicator.h"
#include "cuda/driver_api.h"
#include "collectives/staged_cuda.h"
#include "device_path.h"
#include "device_probe.h"
#include "pointer_rules.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

static_assert(kDriverMemoryHost == int{CU_MEMORYTYPE_HOST} && kDriverMemoryDevice == int{CU_MEMORYTYPE_DEVICE} &&
                  kDriverMemoryArray == int{CU_MEMORYTYPE_ARRAY} && kDriverMemoryUnified == int{CU_MEMORYTYPE_UNIFIED},
              "pointer_rules.h mirrors CUmemorytype");

namespace {

class CudaDevicePath final : public DevicePath {
 public:
  explicit CudaDevicePath(const DevicePathContext& context) : context_(context) {}

  bool ncclDecided() const override { return ncclForcedOff() || state_ != NcclState::kUnknown; }
  void decideNccl(Deadline& deadline) override;
  bool ncclUsable(std::string* whyNot) const override;
  int device() const override;

  void ncclRun(const Call& call, Deadline& deadline) override { nccl(collectiveName(call.kind)).run(call, deadline); }

  StagingMemory& staging() override {
    if (!staging_) staging_ = std::make_unique<CudaStagingMemory>();
    return *staging_;
  }

  void abort() noexcept override {
    if (nccl_) nccl_->abort();
    // A staged call that failed may have left receives into this memory pending (an MPI_Iallreduce
    // cannot be cancelled): never free it. The communicator is unusable from here on.
    static_cast<void>(staging_.release());
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
    *why = "RINGSYNC_CUDA_DEVICE=" + std::to_string(wanted) + " but only " + std::to_string(count) +
           " GPU(s) are visible";
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
    context_.logger->info("device buffers: NCCL communicator of " + std::to_string(context_.size) +
                          " ranks on device " + std::to_string(inputs.device));
  } else {
    context_.logger->info("device buffers: NCCL not usable (" + ncclWhy_ + "); they take the staged path");
  }
}

}  // namespace

MemoryKind classifyPointer(const void* pointer) { return describePointer(pointer).kind; }

PointerPlace describePointer(const void* pointer) {
  if (pointer == nullptr || visibleGpuCount() == 0) return {MemoryKind::kHost, -1};
  // The driver, not cudaPointerGetAttributes: the runtime call would create a context on the
  // thread's current device (GPU 0 unless set) in every host-only rank and in the averager's
  // progress thread. The driver's answers leave the runtime's last error alone as well.
  return placeFromDriver(pointer, cuda::anyContextExists(visibleGpuCount()), [pointer] {
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int memoryType = 0;
    int ordinal = -1;
    void* values[] = {&memoryType, &ordinal};
    DriverPointerAnswer answer;
    const CUresult rc = cuda::driverApi().pointerGetAttributes(2, attributes, values,
                                                               reinterpret_cast<CUdeviceptr>(pointer));
    answer.succeeded = rc == CUDA_SUCCESS;
    if (!answer.succeeded) answer.error = std::string(cuda::driverErrorName(rc)) + " (" + std::to_string(rc) + ")";
    answer.memoryType = static_cast<int>(memoryType);
    answer.deviceOrdinal = ordinal;
    return answer;
  });
}

std::unique_ptr<DevicePath> makeDevicePath(const DevicePathContext& context) {
  return std::make_unique<CudaDevicePath>(context);
}

}  // namespace ringsync::detail
