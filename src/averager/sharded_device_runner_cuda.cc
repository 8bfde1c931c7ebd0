// The sharded device runner: the sharded host runner's two collectives (sharded_host_runner.cc) on
// the averager's own stream, through the Communicator's device reduce-scatter and all-gather (NCCL's
// ncclReduceScatter / ncclAllGather, or staged through host memory).
//
//   run (reduce-scatter)  waits on the gradients' events; in place over them when they lie back to
//                         back without padding; else one batched pack launch into the fused buffer
//                         (its padding zeroed), the reduce-scatter there, and one unpack launch of
//                         this rank's owned ranges only
//   gather (all-gather)   waits on the parameters' events (markUpdated); in place likewise; else a
//                         pack launch of the owned ranges into this rank's block, the all-gather, an
//                         unpack launch of every parameter; then records the bucket's event
// waitGathered() polls that event under the deadline (waitForParameter), or the caller's stream
// waits on it (waitForParameter with a stream); finishStep() polls the stream.
// The development machines have no GPU: this file is compiled and linked there, never run.
#include <algorithm>
#include <memory>
#include <string>

#include "cuda/cuda_check.h"
#include "cuda/pack_kernels.h"
#include "device_runner_cuda.h"
#include "shard_plan.h"

namespace ringsync::detail {
namespace {

std::byte* at(void* base, std::size_t element, std::size_t elementBytes) {
  return static_cast<std::byte*>(base) + element * elementBytes;
}

// The packed buckets' four copy plans (each uploaded once: the entries never change).
struct BucketPlans {
  std::unique_ptr<cuda::PackPlan> gradients;        // every gradient into the fused layout
  std::unique_ptr<cuda::PackPlan> ownedGradients;   // the owned ranges back out
  std::unique_ptr<cuda::PackPlan> ownedParameters;  // the owned ranges in
  std::unique_ptr<cuda::PackPlan> parameters;       // every parameter back out
};

class ShardedDeviceRunner final : public DeviceStreamRunner {
 public:
  explicit ShardedDeviceRunner(const RunnerContext& context) : DeviceStreamRunner(context), shards_(*context.shards) {
    cuda::DeviceGuard onDevice(device_);  // the events and buffers belong to the gradients' GPU
    updated_ = eventsFor(*context_.parameters);
    const std::vector<Bucket>& buckets = *context_.buckets;
    plans_.resize(buckets.size());
    gathered_.resize(buckets.size());
    std::size_t fusedBytes = 0;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (!buckets[b].onDevice) continue;
      gathered_[b].emplace();
      if (buckets[b].count == 0 || (shards_.reduceScatterInPlace(b) && shards_.gatherInPlace(b))) continue;
      makePlans(b);
      fusedBytes = std::max(fusedBytes, shards_.paddedCount(b) * dataTypeSize(buckets[b].type));
    }
    fused_ = cuda::DeviceBuffer(fusedBytes);
    if (fusedBytes > 0) RINGSYNC_CHECK_CUDA(cudaMemset(fused_.data(), 0, fusedBytes));
  }

  void noteUpdated(std::size_t parameter, CUstream_st* stream) override { updated_[parameter]->record(stream); }

  void run(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    timing.path = "device";
    timing.collective = "reduce-scatter";
    cuda::DeviceGuard onDevice(device_);
    const Bucket& bucket = (*context_.buckets)[index];
    cudaStream_t stream = stream_->get();
    waitForMembers(bucket, ready_);
    if (bucket.count == 0) return;
    const std::size_t block = shards_.block(index), elementBytes = dataTypeSize(bucket.type);
    if (shards_.reduceScatterInPlace(index)) {
      comm.reduceScatter(bucket.contiguousData, at(bucket.contiguousData, context_.rank * block, elementBytes), block,
                         bucket.type, context_.op, stream);
      return;
    }
    // The buffer serves every bucket: the padding after each shorter chunk may hold another's values.
    for (int r = 0; r < shards_.ranks(); ++r) {
      const std::size_t length = shards_.chunk(index, r).count;
      if (length < block)
        RINGSYNC_CHECK_CUDA(
            cudaMemsetAsync(at(fused_.data(), static_cast<std::size_t>(r) * block + length, elementBytes), 0,
                            (block - length) * elementBytes, stream));
    }
    plans_[index].gradients->pack(fused_.data(), 1.0, stream);
    comm.reduceScatter(fused_.data(), at(fused_.data(), context_.rank * block, elementBytes), block, bucket.type,
                       context_.op, stream);
    if (plans_[index].ownedGradients) plans_[index].ownedGradients->unpack(fused_.data(), 1.0, stream);
  }

  void gather(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    timing.path = "device";
    timing.collective = "all-gather";
    cuda::DeviceGuard onDevice(device_);
    const Bucket& bucket = (*context_.buckets)[index];
    cudaStream_t stream = stream_->get();
    waitForMembers(bucket, updated_);
    if (bucket.count > 0) {
      const std::size_t block = shards_.block(index), elementBytes = dataTypeSize(bucket.type);
      if (shards_.gatherInPlace(index)) {
        void* span = shards_.parameterSpan(index);
        comm.allgather(at(span, context_.rank * block, elementBytes), span, block, bucket.type, stream);
      } else {
        if (plans_[index].ownedParameters) plans_[index].ownedParameters->pack(fused_.data(), 1.0, stream);
        comm.allgather(at(fused_.data(), context_.rank * block, elementBytes), fused_.data(), block, bucket.type,
                       stream);
        plans_[index].parameters->unpack(fused_.data(), 1.0, stream);
      }
    }
    gathered_[index]->record(stream);
  }

  void streamWaitsGathered(std::size_t bucket, CUstream_st* stream) override {
    cuda::DeviceGuard onDevice(device_);
    RINGSYNC_CHECK_CUDA(cudaStreamWaitEvent(stream, gathered_[bucket]->get(), 0));
  }

  void waitGathered(std::size_t bucket, double timeoutSeconds) override {
    cuda::DeviceGuard onDevice(device_);
    cudaEvent_t event = gathered_[bucket]->get();
    pollUntilDone([event] { return cudaEventQuery(event); }, timeoutSeconds,
                  "ShardedGradientAverager::waitForParameter");
  }

 private:
  // Entries for every member of `bucket` in `buffers` (owned: only this rank's range of each), one
  // per run of the padded layout.
  std::unique_ptr<cuda::PackPlan> planFor(std::size_t bucket, const std::vector<GradientSpec>& buffers,
                                          bool owned) const {
    const Bucket& b = (*context_.buckets)[bucket];
    const std::size_t elementBytes = dataTypeSize(b.type);
    std::vector<cuda::PackEntry> entries;
    for (const BucketMember& m : b.members) {
      const ShardRange range = owned ? shards_.owned(m, bucket, context_.rank) : ShardRange{0, m.count};
      shards_.forEachRun(m, bucket, range, [&](std::size_t i, std::size_t padded, std::size_t length) {
        entries.push_back({at(buffers[m.gradient].data, i, elementBytes), padded, length});
      });
    }
    if (entries.empty()) return nullptr;  // this rank owns nothing of the bucket
    return std::make_unique<cuda::PackPlan>(entries.data(), entries.size(), b.type);
  }

  void makePlans(std::size_t bucket) {
    plans_[bucket].gradients = planFor(bucket, *context_.gradients, false);
    plans_[bucket].ownedGradients = planFor(bucket, *context_.gradients, true);
    plans_[bucket].ownedParameters = planFor(bucket, *context_.parameters, true);
    plans_[bucket].parameters = planFor(bucket, *context_.parameters, false);
  }

  const ShardPlan& shards_;
  std::vector<std::optional<cuda::Event>> updated_;   // per parameter; empty for host ones
  std::vector<std::optional<cuda::Event>> gathered_;  // per device bucket: its gather landed
  std::vector<BucketPlans> plans_;
  cuda::DeviceBuffer fused_;
};

}  // namespace

std::unique_ptr<BucketRunner> makeShardedDeviceRunner(const RunnerContext& context) {
  return std::make_unique<ShardedDeviceRunner>(context);
}

}  // namespace ringsync::detail
