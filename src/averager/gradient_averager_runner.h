// How one bucket is exchanged: host buckets by a host runner (on the calling thread), device buckets
// by the device runner (batched pack kernel, collective and unpack enqueued on the averager's own
// CUDA stream, after events recorded where the gradients were made). A replicated averager
// all-reduces each bucket (gradient_averager_host.cc); a sharded one reduce-scatters it and later
// all-gathers its parameters (sharded_host_runner.cc). The averager calls run() and gather() in
// its task order, from one thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "bucket_plan.h"
#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"

struct CUstream_st;

namespace ringsync::detail {

class ShardPlan;

struct RunnerContext {
  const std::vector<Bucket>* buckets;
  const std::vector<GradientSpec>* gradients;
  ReduceOp op;
  bool compressFp16;
  // Sharded averagers only (null otherwise): the partition, the parameters and this rank.
  const ShardPlan* shards = nullptr;
  const std::vector<GradientSpec>* parameters = nullptr;
  int rank = 0;
};

class BucketRunner {
 public:
  virtual ~BucketRunner() = default;
  // Gradient `gradient` was produced on `stream` (device runner only; called by markReady).
  virtual void noteReady(std::size_t /*gradient*/, CUstream_st* /*stream*/) {}
  // Gradient `gradient` now lies elsewhere (GradientSpec::data changed: markReadyAt on a replicated
  // averager's host gradient); its bucket is not running and runs only after the gradient is marked.
  virtual void noteMoved(std::size_t /*gradient*/) {}
  // Parameter `parameter`'s shard was updated on `stream` (device runner only; markUpdated).
  virtual void noteUpdated(std::size_t /*parameter*/, CUstream_st* /*stream*/) {}
  // All-reduces bucket `bucket` through `comm` (a sharded runner: reduce-scatters it, leaving each
  // gradient's owned range averaged), noting where the time went in `timing` (path, pack,
  // exchange, unpack). The device runner only enqueues the work.
  virtual void run(std::size_t bucket, Communicator& comm, BucketTiming& timing) = 0;
  // Sharded runners: all-gathers bucket `bucket`'s parameters from every rank's owned block.
  virtual void gather(std::size_t bucket, Communicator& comm, BucketTiming& timing);
  // Waits until every bucket run (or gathered) so far has landed; TimeoutError after
  // `timeoutSeconds` (0: never), for a peer that stopped leaves device work waiting forever.
  virtual void finishStep(double /*timeoutSeconds*/) {}
  // Waits until bucket `bucket`'s gather, already started, has landed in the parameters (device
  // runner; host gathers are complete when gather() returns).
  virtual void waitGathered(std::size_t /*bucket*/, double /*timeoutSeconds*/) {}
  // Makes `stream` wait for bucket `bucket`'s gather, already started (device runner).
  virtual void streamWaitsGathered(std::size_t /*bucket*/, CUstream_st* /*stream*/) {}
};

// The replicated or the sharded host runner, by context.shards.
std::unique_ptr<BucketRunner> makeHostRunner(const RunnerContext& context);
std::unique_ptr<BucketRunner> makeShardedHostRunner(const RunnerContext& context);

// Device support (gradient_averager_device_{cuda,none}.cc).
// Raises BackendError in a build without CUDA.
std::unique_ptr<BucketRunner> makeDeviceRunner(const RunnerContext& context);

}  // namespace ringsync::detail
