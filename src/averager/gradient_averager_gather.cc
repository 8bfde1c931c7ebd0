// ShardedGradientAverager's second half of a step: parameters marked updated count their bucket's
// all-gather down (it starts on the progress thread once complete), waits for one bucket or for
// all, and the end of the gather (gatherParameters, or the next step's first markReady). Also
// the partition's queries.
#include <cstdint>
#include <sstream>
#include <string>

#include "gradient_averager_impl.h"
#include "src/core_access.h"

namespace ringsync {
namespace {

constexpr std::size_t kMissingNamed = 8;  // how many unmarked parameters an error lists

}  // namespace

void GradientAverager::Impl::markUpdated(std::size_t index, CUstream_st* stream) {
  ensureUsable();
  checkIndex(index, "markUpdated");
  if (!gathering_)
    throw InvalidArgument(
        "ShardedGradientAverager::markUpdated: no step is between synchronize() and its gather; "
        "parameters are marked updated after synchronize() (parameter " +
        std::to_string(index) + ")");
  if (updated_[index])
    throw InvalidArgument("ShardedGradientAverager::markUpdated: parameter " + std::to_string(index) +
                          " was already marked updated in this step");
  // The gather is an NCCL epoch of its own for device buckets (device_epochs.h).
  if (updatedCount_ == 0 && deviceRunner_) detail::CoreAccess::of(comm_).averagerStepBegins();
  updated_[index] = true;
  ++updatedCount_;
  const std::size_t bucket = bucketOf_[index];
  --gatherPending_[bucket];
  if (parameters_[index].onDevice) deviceRunner_->noteUpdated(index, stream);
  if (!overlap_) return;
  const std::size_t task = gatherTask(bucket);
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    complete = --pending_[task] == 0;
    if (complete) readyAt_[task] = std::chrono::steady_clock::now();
  }
  if (complete) workReady_.notify_one();
}

void GradientAverager::Impl::waitForParameter(std::size_t index, CUstream_st* stream, bool onStream) {
  ensureUsable();
  checkIndex(index, "waitForParameter");
  if (!gathering_) return;  // the parameters are complete outside the gather
  const std::size_t bucket = bucketOf_[index];
  // Gathers run in order: this one waits for every gather before it, and each needs all of its
  // bucket's parameters marked (else, with or without the progress thread, it would never run).
  for (std::size_t task = bucketCount(); task <= gatherTask(bucket); ++task) {
    const std::size_t b = bucketOfTask(task);
    if (gatherPending_[b] == 0) continue;
    std::size_t missing = 0;
    for (const detail::BucketMember& member : buckets_[b].members)
      if (!updated_[member.gradient]) {
        missing = member.gradient;
        break;
      }
    throw InvalidArgument("ShardedGradientAverager::waitForParameter(" + std::to_string(index) + "): parameter " +
                          std::to_string(missing) + " was not marked updated, and its bucket is gathered " +
                          (b == bucket ? "with" : "before") + " this one's; mark it (markUpdated) first");
  }
  std::exception_ptr error = advanceTo(gatherTask(bucket) + 1);
  if (!error && parameters_[index].onDevice) {
    try {
      if (onStream) return deviceRunner_->streamWaitsGathered(bucket, stream);
      deviceRunner_->waitGathered(bucket, comm_.options().timeoutSeconds);
    } catch (const TimeoutError& timeout) {
      abortCommunicator(timeout.what());
      error = std::current_exception();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (!error) return;
  gatherErrorRaised_ = true;
  if (comm_.aborted()) noteFailure(AbortedError(comm_.abortReason()));
  std::rethrow_exception(error);
}

void GradientAverager::Impl::gatherParameters() {
  ensureUsable();
  if (!gathering_) return;
  for (std::size_t i = 0; i < parameters_.size(); ++i)  // forward order: the first gather first
    if (!updated_[i]) markUpdated(i, nullptr);
  endGather("gatherParameters");
}

void GradientAverager::Impl::endGather(const char* caller) {
  if (updatedCount_ != parameters_.size()) {
    std::string names;
    std::size_t named = 0;
    for (std::size_t i = 0; i < parameters_.size() && named < kMissingNamed; ++i)
      if (!updated_[i]) names += (named++ ? ", " : "") + std::to_string(i);
    const std::size_t missing = parameters_.size() - updatedCount_;
    if (missing > named) names += ", ...";
    throw InvalidArgument("ShardedGradientAverager::" + std::string(caller) + ": " + std::to_string(missing) +
                          " parameters were not marked updated after the last synchronize() (" + names +
                          "); call markUpdated for each, or gatherParameters(), first");
  }
  std::exception_ptr error = advanceTo(taskCount_);
  if (!error && deviceRunner_) {
    try {
      waitForDevice();
    } catch (...) {
      error = std::current_exception();
    }
  }
  detail::CoreAccess::of(comm_).averagerStepEnds();
  gathering_ = false;
  resetStep();  // every task ran or was skipped: the progress thread waits for the next step
  lastStep_ = timings_;
  if (!error) return;
  if (comm_.aborted()) noteFailure(AbortedError(comm_.abortReason()));
  if (!gatherErrorRaised_) std::rethrow_exception(error);
}

ShardRange GradientAverager::Impl::shardOf(int rank, std::size_t index, const char* caller) const {
  checkIndex(index, caller);
  if (rank < 0 || rank >= comm_.size())
    throw InvalidArgument("ShardedGradientAverager::" + std::string(caller) + ": rank=" + std::to_string(rank) +
                          " is out of range (" + std::to_string(comm_.size()) + " ranks)");
  return shards_->owned(index, rank);
}

ShardRange GradientAverager::Impl::shardOfPointer(const void* data) const {
  // A non-empty tensor's buffer is unique (checked at construction); empty ones may share any
  // pointer and own nothing anyway.
  for (const std::vector<detail::GradientSpec>* list : {&gradients_, &parameters_})
    for (std::size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].data == data && (*list)[i].count > 0) return shards_->owned(i, comm_.rank());
  for (const std::vector<detail::GradientSpec>* list : {&gradients_, &parameters_})
    for (std::size_t i = 0; i < list->size(); ++i)
      if ((*list)[i].data == data && data != nullptr) return shards_->owned(i, comm_.rank());
  std::ostringstream text;
  text << "ShardedGradientAverager::shard: " << data
       << " is not the start of a gradient or parameter this averager holds (" << gradients_.size()
       << " tensors registered)";
  throw InvalidArgument(text.str());
}

}  // namespace ringsync
