// What both device runners share (CUDA builds only): the GPU the averager's device gradients are
// on (one per averager), the averager's own stream, an event per device gradient recorded where it
// was produced (markReady), and the deadline-bounded wait for work on the stream. The replicated
// runner (gradient_averager_device_cuda.cc) all-reduces each bucket on that stream, the sharded
// one (sharded_device_runner_cuda.cc) reduce-scatters it and later all-gathers its parameters.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/device_memory.h"
#include "gradient_averager_runner.h"

namespace ringsync::detail {

class DeviceStreamRunner : public BucketRunner {
 public:
  // InvalidArgument when the device gradients lie on several GPUs.
  explicit DeviceStreamRunner(const RunnerContext& context);

  void noteReady(std::size_t gradient, CUstream_st* stream) override { ready_[gradient]->record(stream); }
  // Polls instead of cudaStreamSynchronize: NCCL's kernel spins forever when a peer died, and only
  // a deadline (then aborting the communicator, which frees the kernel) gets the caller out.
  void finishStep(double timeoutSeconds) override;

 protected:
  // The averager's stream waits for every event of `events` that belongs to a member of `bucket`.
  void waitForMembers(const Bucket& bucket, const std::vector<std::optional<cuda::Event>>& events) const;
  // Polls `query` (cudaStreamQuery, cudaEventQuery) until it reports success; TimeoutError naming
  // `what` after `timeoutSeconds` (0: never).
  static void pollUntilDone(const std::function<cudaError_t()>& query, double timeoutSeconds, const char* what);
  // One event per device buffer of `buffers` (the gradients or the parameters).
  static std::vector<std::optional<cuda::Event>> eventsFor(const std::vector<GradientSpec>& buffers);

  RunnerContext context_;
  int device_ = -1;
  std::optional<cuda::Stream> stream_;
  std::vector<std::optional<cuda::Event>> ready_;  // per gradient; empty for host gradients
};

std::unique_ptr<BucketRunner> makeShardedDeviceRunner(const RunnerContext& context);

}  // namespace ringsync::detail
