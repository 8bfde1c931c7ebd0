// The device runners' shared part (device_runner_cuda.h) and the replicated one: each device
// bucket is packed by one batched kernel launch (cuda::PackPlan), all-reduced through the
// Communicator's device path (NCCL, or staged through host memory) and unpacked by one more
// launch, all on the averager's own stream, which first waits on the events recorded where the
// bucket's gradients were produced. The host blocks only in finishStep().
// The development machines have no GPU: this file is compiled and linked there, never run.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>

#include "cuda/cuda_check.h"
#include "cuda/pack_kernels.h"
#include "device_runner_cuda.h"
#include "ringsync/errors.h"
#include "src/device_path.h"
#include "src/device_probe.h"

namespace ringsync::detail {
namespace {

// The pointer's GPU, from the one classifier (no context created, errors raised).
int deviceOf(const void* pointer) { return describePointer(pointer).device; }

class DeviceRunner final : public DeviceStreamRunner {
 public:
  explicit DeviceRunner(const RunnerContext& context) : DeviceStreamRunner(context) { makePlans(); }

  void run(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    // Host clocks would time the enqueueing only: the breakdown gives this bucket's path, not times.
    timing.path = "device";
    cuda::DeviceGuard onDevice(device_);  // the progress thread, or the caller's thread without overlap
    const Bucket& bucket = (*context_.buckets)[index];
    cudaStream_t stream = stream_->get();
    waitForMembers(bucket, ready_);
    if (bucket.count == 0) return;
    if (bucket.contiguousData != nullptr) {
      comm.allreduce(bucket.contiguousData, bucket.contiguousData, bucket.count, bucket.type, context_.op, stream);
      return;
    }
    const cuda::PackPlan& plan = *plans_[index];
    plan.pack(fused_.data(), 1.0, stream);
    comm.allreduce(fused_.data(), fused_.data(), bucket.count, bucket.type, context_.op, stream);
    plan.unpack(fused_.data(), 1.0, stream);
  }

 private:
  // One PackPlan per packed device bucket (its entries are fixed, so each table is uploaded once)
  // and one fused device buffer for the largest: buckets run one after another on one stream.
  void makePlans() {
    const std::vector<Bucket>& buckets = *context_.buckets;
    plans_.resize(buckets.size());
    std::size_t fusedBytes = 0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      const Bucket& bucket = buckets[b];
      if (!bucket.onDevice || bucket.contiguousData != nullptr || bucket.count == 0) continue;
      std::vector<cuda::PackEntry> entries;
      for (const BucketMember& member : bucket.members)
        if (member.count > 0)
          entries.push_back({(*context_.gradients)[member.gradient].data, member.offset, member.count});
      plans_[b] = std::make_unique<cuda::PackPlan>(entries.data(), entries.size(), bucket.type);
      fusedBytes = std::max(fusedBytes, bucket.bytes());
    }
    fused_ = cuda::DeviceBuffer(fusedBytes);
    // The padding between members (kDeviceMemberAlignment) is never packed: zero, it stays zero
    // through every sum and average, and a finiteness check never trips on it.
    if (fusedBytes > 0) RINGSYNC_CHECK_CUDA(cudaMemset(fused_.data(), 0, fusedBytes));
  }

  std::vector<std::unique_ptr<cuda::PackPlan>> plans_;
  cuda::DeviceBuffer fused_;
};

}  // namespace

DeviceStreamRunner::DeviceStreamRunner(const RunnerContext& context) : context_(context) {
  const std::vector<GradientSpec>& gradients = *context_.gradients;
  for (std::size_t g = 0; g < gradients.size(); ++g) {
    if (!gradients[g].onDevice) continue;
    const int device = deviceOf(gradients[g].data);
    if (device_ < 0) device_ = device;
    if (device != device_)
      throw InvalidArgument("GradientAverager: gradient " + std::to_string(g) + " is on GPU " + std::to_string(device) +
                            ", earlier ones on GPU " + std::to_string(device_) + "; one averager serves one GPU");
  }
  cuda::DeviceGuard onDevice(device_);
  stream_.emplace();
  ready_ = eventsFor(gradients);
}

std::vector<std::optional<cuda::Event>> DeviceStreamRunner::eventsFor(const std::vector<GradientSpec>& buffers) {
  std::vector<std::optional<cuda::Event>> events(buffers.size());
  for (std::size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].onDevice) events[i].emplace();
  return events;
}

void DeviceStreamRunner::waitForMembers(const Bucket& bucket,
                                        const std::vector<std::optional<cuda::Event>>& events) const {
  for (const BucketMember& member : bucket.members)
    if (events[member.gradient])
      RINGSYNC_CHECK_CUDA(cudaStreamWaitEvent(stream_->get(), events[member.gradient]->get(), 0));
}

void DeviceStreamRunner::pollUntilDone(const std::function<cudaError_t()>& query, double timeoutSeconds,
                                       const char* what) {
  const auto start = std::chrono::steady_clock::now();
  for (unsigned polls = 0;; ++polls) {
    const cudaError_t state = query();
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) RINGSYNC_CHECK_CUDA(state);
    if (cudaPeekAtLastError() == cudaErrorNotReady) cudaGetLastError();  // not a failure of the caller's
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeoutSeconds > 0 && elapsed > timeoutSeconds)
      throw TimeoutError(std::string(what) + ": the device buckets did not complete within " +
                         std::to_string(timeoutSeconds) +
                         " s (RINGSYNC_TIMEOUT_SECONDS); a peer stopped answering; the communicator is now aborted");
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void DeviceStreamRunner::finishStep(double timeoutSeconds) {
  cuda::DeviceGuard onDevice(device_);
  cudaStream_t stream = stream_->get();
  pollUntilDone([stream] { return cudaStreamQuery(stream); }, timeoutSeconds, "GradientAverager::synchronize");
}

std::unique_ptr<BucketRunner> makeDeviceRunner(const RunnerContext& context) {
  if (context.shards != nullptr) return makeShardedDeviceRunner(context);
  return std::make_unique<DeviceRunner>(context);
}

}  // namespace ringsync::detail
