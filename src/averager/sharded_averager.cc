// ShardedGradientAverager's public face: forwards to the averager's Impl in its sharded mode
// (gradient_averager_impl.h: the same plan, checks and progress thread as GradientAverager's).
#include "ringsync/sharded_averager.h"

#include "gradient_averager_impl.h"

namespace ringsync {

ShardedGradientAverager::ShardedGradientAverager(const Communicator& comm, std::vector<GradientBuffer> gradients,
                                                 std::vector<GradientBuffer> parameters,
                                                 const GradientAveragerOptions& options)
    : impl_(std::make_unique<GradientAverager::Impl>(comm, std::move(gradients), std::move(parameters), options)) {}

ShardedGradientAverager::~ShardedGradientAverager() = default;

void ShardedGradientAverager::markReady(std::size_t index) { impl_->markReady(index, nullptr); }
void ShardedGradientAverager::markReady(std::size_t index, CUstream_st* stream) { impl_->markReady(index, stream); }
void ShardedGradientAverager::markReadyAt(std::size_t index, const void* data, CUstream_st* stream) {
  impl_->markReadyAt(index, data, stream);
}
void ShardedGradientAverager::synchronize() { impl_->synchronize(); }
void ShardedGradientAverager::averageAll() { impl_->averageAll(); }

ShardRange ShardedGradientAverager::shard(std::size_t index) const {
  return impl_->shardOf(impl_->comm_.rank(), index, "shard");
}
ShardRange ShardedGradientAverager::shardOf(int rank, std::size_t index) const {
  return impl_->shardOf(rank, index, "shardOf");
}
ShardRange ShardedGradientAverager::shard(const void* data) const { return impl_->shardOfPointer(data); }
std::size_t ShardedGradientAverager::shardElements() const {
  return impl_->shards_->ownedElements(impl_->comm_.rank());
}

void ShardedGradientAverager::markUpdated(std::size_t index) { impl_->markUpdated(index, nullptr); }
void ShardedGradientAverager::markUpdated(std::size_t index, CUstream_st* stream) { impl_->markUpdated(index, stream); }
void ShardedGradientAverager::waitForParameter(std::size_t index) { impl_->waitForParameter(index, nullptr, false); }
void ShardedGradientAverager::waitForParameter(std::size_t index, CUstream_st* stream) {
  impl_->waitForParameter(index, stream, true);
}
void ShardedGradientAverager::gatherParameters() { impl_->gatherParameters(); }

std::size_t ShardedGradientAverager::gradientCount() const { return impl_->gradients_.size(); }
std::size_t ShardedGradientAverager::bucketCount() const { return impl_->buckets_.size(); }
std::vector<std::size_t> ShardedGradientAverager::bucketAssignment() const { return impl_->bucketOf_; }
bool ShardedGradientAverager::overlapping() const { return impl_->overlap_; }
GradientAveragerStats ShardedGradientAverager::stats() const { return impl_->stats_; }
std::vector<BucketTiming> ShardedGradientAverager::lastStepBuckets() const { return impl_->lastStep_; }

}  // namespace ringsync
