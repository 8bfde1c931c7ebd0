// GradientAverager's public face: forwards to the Impl (gradient_averager_impl.cc).
#include "ringsync/gradient_averager.h"

#include "gradient_averager_impl.h"

namespace ringsync {

GradientAverager::GradientAverager(const Communicator& comm, std::vector<GradientBuffer> gradients,
                                   const GradientAveragerOptions& options)
    : impl_(std::make_unique<Impl>(comm, std::move(gradients), options)) {}

GradientAverager::~GradientAverager() = default;

void GradientAverager::markReady(std::size_t index) { impl_->markReady(index, nullptr); }
void GradientAverager::markReady(std::size_t index, CUstream_st* stream) { impl_->markReady(index, stream); }
void GradientAverager::markReadyAt(std::size_t index, const void* data, CUstream_st* stream) {
  impl_->markReadyAt(index, data, stream);
}
void GradientAverager::synchronize() { impl_->synchronize(); }
void GradientAverager::averageAll() { impl_->averageAll(); }

std::size_t GradientAverager::gradientCount() const { return impl_->gradients_.size(); }
std::size_t GradientAverager::bucketCount() const { return impl_->buckets_.size(); }
std::vector<std::size_t> GradientAverager::bucketAssignment() const { return impl_->bucketOf_; }
bool GradientAverager::overlapping() const { return impl_->overlap_; }
GradientAveragerStats GradientAverager::stats() const { return impl_->stats_; }
std::vector<BucketTiming> GradientAverager::lastStepBuckets() const { return impl_->lastStep_; }

}  // namespace ringsync
