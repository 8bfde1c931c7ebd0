// The device runner: each device bucket is packed by one batched kernel launch (cuda::PackPlan),
// all-reduced through the Communicator's device path (NCCL, or staged through host memory) and
// unpacked by one more launch, all on the averager's own stream, which first waits on the events
// recorded where the bucket's gradients were produced. The host is only blocked in finishStep().
// No GPU on the development machines: this file is compiled and linked there, never run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <string>

#include "cuda/pack_kernels.h"
#include "gradient_averager_runner.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

void checkCuda(cudaError_t status, const char* call, int line) {
  if (status == cudaSuccess) return;
  throw BackendError(std::string("GradientAverager: ") + call + " failed at " + __FILE__ + ":" +
                     std::to_string(line) + ": " + cudaGetErrorString(status));
}
#define RINGSYNC_AVERAGER_CUDA(call) checkCuda((call), #call, __LINE__)

bool processHasGpu() {
  static const bool has = [] {
    int count = 0;  // left untouched when there is no driver (error 35)
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) cudaGetLastError();  // clear the sticky "no device" error
    return status == cudaSuccess && count > 0;
  }();
  return has;
}

struct StreamDeleter {
  void operator()(CUstream_st* stream) const noexcept { cudaStreamDestroy(stream); }
};
struct EventDeleter {
  void operator()(CUevent_st* event) const noexcept { cudaEventDestroy(event); }
};
struct DeviceMemoryDeleter {
  void operator()(void* memory) const noexcept { cudaFree(memory); }
};
using StreamHandle = std::unique_ptr<CUstream_st, StreamDeleter>;
using EventHandle = std::unique_ptr<CUevent_st, EventDeleter>;
using DeviceMemory = std::unique_ptr<void, DeviceMemoryDeleter>;

class DeviceRunner final : public BucketRunner {
 public:
  explicit DeviceRunner(const RunnerContext& context) : context_(context) {
    const std::vector<GradientSpec>& gradients = *context_.gradients;
    cudaPointerAttributes attributes{};
    for (const GradientSpec& g : gradients)
      if (g.onDevice) {
        RINGSYNC_AVERAGER_CUDA(cudaPointerGetAttributes(&attributes, g.data));
        device_ = attributes.device;
        break;
      }
    RINGSYNC_AVERAGER_CUDA(cudaSetDevice(device_));
    cudaStream_t stream = nullptr;
    RINGSYNC_AVERAGER_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);
    ready_.resize(gradients.size());
    for (std::size_t g = 0; g < gradients.size(); ++g) {
      if (!gradients[g].onDevice) continue;
      cudaEvent_t event = nullptr;
      RINGSYNC_AVERAGER_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
      ready_[g].reset(event);
    }
    makePlans();
  }

  void bindThread() override { RINGSYNC_AVERAGER_CUDA(cudaSetDevice(device_)); }

  void noteReady(std::size_t gradient, CUstream_st* stream) override {
    RINGSYNC_AVERAGER_CUDA(cudaEventRecord(ready_[gradient].get(), stream));
  }

  void run(std::size_t index, Communicator& comm) override {
    const Bucket& bucket = (*context_.buckets)[index];
    for (const BucketMember& member : bucket.members)
      if (ready_[member.gradient])
        RINGSYNC_AVERAGER_CUDA(cudaStreamWaitEvent(stream_.get(), ready_[member.gradient].get(), 0));
    if (bucket.count == 0) return;
    if (bucket.contiguousData != nullptr) {
      comm.allreduce(bucket.contiguousData, bucket.contiguousData, bucket.count, bucket.type, context_.op,
                     stream_.get());
      return;
    }
    const cuda::PackPlan& plan = *plans_[index];
    plan.pack(fused_.get(), 1.0, stream_.get());
    comm.allreduce(fused_.get(), fused_.get(), bucket.count, bucket.type, context_.op, stream_.get());
    plan.unpack(fused_.get(), 1.0, stream_.get());
  }

  void finishStep() override { RINGSYNC_AVERAGER_CUDA(cudaStreamSynchronize(stream_.get())); }

 private:
  // One PackPlan per packed device bucket (entries are fixed, so each is uploaded once) and one
  // fused device buffer for the largest of them: buckets run one after another on one stream.
  void makePlans() {
    const std::vector<Bucket>& buckets = *context_.buckets;
    plans_.resize(buckets.size());
    std::size_t fusedBytes = 0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const Bucket& bucket = buckets[b];
      if (!bucket.onDevice || bucket.contiguousData != nullptr || bucket.count == 0) continue;
      std::vector<cuda::PackEntry> entries;
      for (const BucketMember& member : bucket.members)
        if (member.count > 0) entries.push_back({(*context_.gradients)[member.gradient].data, member.offset, member.count});
      plans_[b] = std::make_unique<cuda::PackPlan>(entries.data(), entries.size(), bucket.type);
      fusedBytes = std::max(fusedBytes, bucket.bytes());
    }
    if (fusedBytes == 0) return;
    void* memory = nullptr;
    RINGSYNC_AVERAGER_CUDA(cudaMalloc(&memory, fusedBytes));
    fused_.reset(memory);
  }

  RunnerContext context_;
  int device_ = 0;
  StreamHandle stream_;
  std::vector<EventHandle> ready_;  // per gradient; empty for host gradients
  std::vector<std::unique_ptr<cuda::PackPlan>> plans_;
  DeviceMemory fused_;
};

}  // namespace

bool isDevicePointer(const void* pointer) {
  if (pointer == nullptr || !processHasGpu()) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

std::unique_ptr<BucketRunner> makeDeviceRunner(const RunnerContext& context) {
  return std::make_unique<DeviceRunner>(context);
}

}  // namespace ringsync::detail
