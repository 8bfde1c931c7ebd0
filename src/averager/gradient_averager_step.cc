// GradientAverager's step: markReady counts a bucket down and wakes the progress thread when it
// completes; synchronize waits for the last bucket (a sharded averager: for the last
// reduce-scatter) and ends the step (a sharded one: moves on to the update and the gather).
#include <chrono>
#include <optional>
#include <sstream>
#include <string>

#include "gradient_averager_impl.h"
#include "src/core_access.h"
#include "src/device_path.h"

namespace ringsync {
namespace {

constexpr std::size_t kMissingNamed = 8;  // how many unmarked gradients an error lists

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void GradientAverager::Impl::checkIndex(std::size_t index, const char* caller) const {
  if (index < gradients_.size()) return;
  throw InvalidArgument(std::string(settings_.who()) + "::" + caller + ": index=" + std::to_string(index) +
                        " is out of range (" + std::to_string(gradients_.size()) +
                        (settings_.sharded ? " tensors" : " gradients") + " registered)");
}

void GradientAverager::Impl::markReadyAt(std::size_t index, const void* data, CUstream_st* stream) {
  ensureUsable();
  checkIndex(index, "markReadyAt");
  const detail::GradientSpec& registered = gradients_[index];
  const bool moves = registered.count > 0 && data != registered.data;
  if (moves) moveGradient(index, data);  // checks the new place
  markReady(index, stream, moves);
}

void GradientAverager::Impl::moveGradient(std::size_t index, const void* data) {
  const detail::GradientSpec& registered = gradients_[index];
  const std::string gradient = std::string(settings_.who()) + "::markReadyAt: gradient " + std::to_string(index);
  if (marked_[index])
    throw InvalidArgument(gradient +
                          " was already marked ready in this step; call synchronize() before marking it again");
  if (data == nullptr)
    throw InvalidArgument(gradient + ": data is null with count=" + std::to_string(registered.count));
  if (settings_.sharded || registered.onDevice) {
    std::ostringstream text;
    text << gradient << " now lies at " << data << ", but the averager was built over it at " << registered.data
         << (settings_.sharded ? " (a sharded averager's gradients stay where they were registered: its shards are "
                                 "planned over that memory)"
                               : " (device gradients stay where they were registered: the device buckets' pack "
                                 "plan is fixed at construction)")
         << "; the gradient moved or was freed: keep it where it was registered (libtorch: zero_grad(false), or a "
            "buffer you own and copy into; or ringsync::torch::DistributedDataParallel)";
    throw InvalidArgument(text.str());
  }
  if (detail::classifyPointer(data) == detail::MemoryKind::kDevice) {
    std::ostringstream text;
    text << gradient << " was registered in host memory, but data=" << data
         << " is device memory (a gradient keeps its kind of memory)";
    throw InvalidArgument(text.str());
  }
  if (!markedPlaces_.tracking()) markedPlaces_.startTracking(gradients_, marked_);
  checkPlaceFree(index, data, "markReadyAt");
  // Its bucket cannot be running: it runs once all its members are marked, and this one is not.
  gradients_[index].data = const_cast<void*>(data);
  hostRunner_->noteMoved(index);
}

void GradientAverager::Impl::checkPlaceFree(std::size_t index, const void* data, const char* caller) const {
  const detail::GradientSpec& g = gradients_[index];
  const std::optional<detail::MarkedPlaces::Place> other = markedPlaces_.overlapping(g, data);
  if (!other) return;
  const std::size_t bytes = g.count * dataTypeSize(g.type);
  std::ostringstream text;
  text << settings_.who() << "::" << caller << ": gradient " << index << " at " << data << " (" << bytes
       << " bytes) overlaps gradient " << other->index << " at " << reinterpret_cast<const void*>(other->begin) << " ("
       << other->end - other->begin
       << " bytes), marked in this step: two gradients in one buffer would be averaged twice; give each gradient "
          "memory of its own";
  throw InvalidArgument(text.str());
}

void GradientAverager::Impl::markReady(std::size_t index, CUstream_st* stream, bool placeChecked) {
  ensureUsable();
  checkIndex(index, "markReady");
  if (gathering_) endGather("markReady");  // a sharded averager's next step begins here
  if (marked_[index])
    throw InvalidArgument(std::string(settings_.who()) + "::markReady: gradient " + std::to_string(index) +
                          " was already marked ready in this step; call synchronize() before marking it again");
  if (!placeChecked) checkPlaceFree(index, gradients_[index].data, "markReady");
  ensureAgreed();
  // A step with device buckets is an NCCL epoch of this averager's own communicator (device_epochs.h).
  if (markedCount_ == 0 && deviceRunner_) detail::CoreAccess::of(comm_).averagerStepBegins();
  marked_[index] = true;
  ++markedCount_;
  markedPlaces_.add(index, gradients_[index]);
  if (timeline_) timeline_->instant(detail::SpanKind::kMarkReady, index);
  if (gradients_[index].onDevice) deviceRunner_->noteReady(index, stream);
  if (!overlap_) return;
  const std::size_t task = bucketOf_[index];
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    complete = --pending_[task] == 0;
    if (complete) readyAt_[task] = std::chrono::steady_clock::now();
  }
  if (complete) workReady_.notify_one();
}

void GradientAverager::Impl::checkAllMarked() const {
  if (markedCount_ == gradients_.size()) return;
  std::string names;
  std::size_t named = 0;
  for (std::size_t g = 0; g < gradients_.size() && named < kMissingNamed; ++g)
    if (!marked_[g]) names += (named++ ? ", " : "") + std::to_string(g);
  const std::size_t missing = gradients_.size() - markedCount_;
  if (missing > named) names += ", ...";
  throw InvalidArgument(std::string(settings_.who()) + "::synchronize: " + std::to_string(missing) +
                        " gradients were not marked ready in this step (" + names +
                        "); call markReady for each, or averageAll()");
}

void GradientAverager::Impl::synchronize() {
  ensureUsable();
  if (gathering_)
    throw InvalidArgument(
        "ShardedGradientAverager::synchronize: this step's gradients were reduce-scattered "
        "already; mark the parameters updated (markUpdated, or gatherParameters()) and the next "
        "step's gradients ready first");
  ensureAgreed();
  checkAllMarked();
  const detail::TimelineSpan waiting(timeline_.get(), detail::SpanKind::kSynchronize, stats_.steps);
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error = advanceTo(bucketCount());
  if (!error && deviceRunner_) {
    try {
      waitForDevice();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (settings_.sharded) return finishReduceScatter(error, secondsSince(start));
  finishStep(error, secondsSince(start));
}

void GradientAverager::Impl::averageAll() {
  ensureUsable();
  if (gathering_) endGather("averageAll");
  // Backward order, so that with overlap each bucket starts as soon as it is complete.
  for (std::size_t g = gradients_.size(); g-- > 0;)
    if (!marked_[g]) markReady(g, nullptr);
  synchronize();
}

void GradientAverager::Impl::waitForDevice() {
  try {
    deviceRunner_->finishStep(comm_.options().timeoutSeconds);
  } catch (const TimeoutError& timeout) {
    abortCommunicator(timeout.what());
    throw;
  }
}

void GradientAverager::Impl::resetStep() {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_ = taskMembers_;
  next_ = 0;
  error_ = nullptr;
}

void GradientAverager::Impl::finishStep(std::exception_ptr error, double seconds) {
  detail::CoreAccess::of(comm_).averagerStepEnds();
  marked_.assign(marked_.size(), false);
  markedCount_ = 0;
  markedPlaces_.clear();
  resetStep();
  ++stats_.steps;
  lastStep_ = timings_;
  stats_.lastSynchronizeSeconds = seconds;
  stats_.totalSynchronizeSeconds += seconds;
  if (!error) return;
  // A failure that aborted the communicator (timeout, transport) leaves the averager unusable;
  // one found from the fingerprints (mismatch, non-finite input) leaves every rank in step.
  if (comm_.aborted()) noteFailure(AbortedError(comm_.abortReason()));
  std::rethrow_exception(error);
}

void GradientAverager::Impl::finishReduceScatter(std::exception_ptr error, double seconds) {
  detail::CoreAccess::of(comm_).averagerStepEnds();  // the gather is an epoch of its own
  marked_.assign(marked_.size(), false);
  markedCount_ = 0;
  markedPlaces_.clear();
  ++stats_.steps;
  stats_.lastSynchronizeSeconds = seconds;
  stats_.totalSynchronizeSeconds += seconds;
  if (error) {
    // Every task up to the gathers ran or was skipped, and no gather can start: nothing runs.
    resetStep();
    if (comm_.aborted()) noteFailure(AbortedError(comm_.abortReason()));
    std::rethrow_exception(error);
  }
  gathering_ = true;
  updated_.assign(updated_.size(), false);
  updatedCount_ = 0;
  gatherPending_.assign(taskMembers_.begin(), taskMembers_.begin() + static_cast<std::ptrdiff_t>(bucketCount()));
  gatherErrorRaised_ = false;
}

}  // namespace ringsync
