// How one bucket is all-reduced: host buckets by the host runner (pack, all-reduce, unpack on the
// calling thread), device buckets by the device runner (batched pack kernel, all-reduce and unpack
// enqueued on the averager's own CUDA stream, after events recorded where the gradients were made).
// The averager calls run() in launch order, from one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "bucket_plan.h"
#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"

struct CUstream_st;

namespace ringsync::detail {

struct RunnerContext {
  const std::vector<Bucket>* buckets;
  const std::vector<GradientSpec>* gradients;
  ReduceOp op;
  bool compressFp16;
};

class BucketRunner {
 public:
  virtual ~BucketRunner() = default;
  // Gradient `gradient` was produced on `stream` (device runner only; called by markReady).
  virtual void noteReady(std::size_t /*gradient*/, CUstream_st* /*stream*/) {}
  // All-reduces bucket `bucket` through `comm`, noting where the time went in `timing` (path, pack,
  // exchange, unpack). The device runner only enqueues the work.
  virtual void run(std::size_t bucket, Communicator& comm, BucketTiming& timing) = 0;
  // Waits until every bucket run this step has landed in the gradients; TimeoutError after
  // `timeoutSeconds` (0: never), for a peer that stopped leaves device work waiting forever.
  virtual void finishStep(double /*timeoutSeconds*/) {}
};

std::unique_ptr<BucketRunner> makeHostRunner(const RunnerContext& context);

// Device support (gradient_averager_device_{cuda,none}.cc).
// Raises BackendError in a build without CUDA.
std::unique_ptr<BucketRunner> makeDeviceRunner(const RunnerContext& context);

}  // namespace ringsync::detail
