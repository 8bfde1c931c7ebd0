// Where tasks run: on the progress thread as each becomes runnable (overlap), or on the caller's
// thread where it waits for them (no overlap). Either way in task order, and after the first
// failure of a step the remaining tasks are skipped on every rank alike (every rank raises the
// same fingerprint error on the same bucket; a timeout aborts the communicator anyway), and the
// failure is handed to the caller's thread, never to std::terminate.
#include "gradient_averager_impl.h"

namespace ringsync {

void GradientAverager::Impl::runTask(std::size_t task) {
  const std::size_t bucket = bucketOfTask(task);
  // RINGSYNC_TIMELINE: a sharded averager's gathers appear as "bucket B+k", after its B buckets.
  const detail::TimelineSpan span(timeline_.get(), detail::SpanKind::kBucket, task);
  detail::BucketRunner& runner = buckets_[bucket].onDevice ? *deviceRunner_ : *hostRunner_;
  BucketTiming& timing = timings_[task];
  timing = BucketTiming{buckets_[bucket].bytes(), buckets_[bucket].members.size()};
  timing.queuedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - readyAt_[task]).count();
  if (task < bucketCount()) {
    runner.run(bucket, comm_, timing);
  } else {
    runner.gather(bucket, comm_, timing);
  }
}

std::exception_ptr GradientAverager::Impl::advanceTo(std::size_t end) {
  if (overlap_) {
    std::unique_lock<std::mutex> lock(mutex_);
    taskDone_.wait(lock, [&] { return next_ >= end; });
    return error_;
  }
  // No progress thread: nobody else touches the step's counters.
  const auto now = std::chrono::steady_clock::now();
  for (std::size_t task = next_; task < end; ++task) readyAt_[task] = now;
  for (; next_ < end; ++next_) {
    if (error_) continue;
    try {
      runTask(next_);
    } catch (...) {
      error_ = std::current_exception();
    }
  }
  return error_;
}

void GradientAverager::Impl::progressLoop() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto runnable = [&] { return next_ < taskCount_ && pending_[next_] == 0; };
    workReady_.wait(lock, [&] { return stop_ || runnable(); });
    // Stopping (the averager is destroyed mid-step): first run every task that is already
    // runnable. Every rank marked the same gradients, so every rank runs the same tasks; stopping
    // at once instead would leave a peer whose thread had already started the next one waiting.
    if (!runnable()) return;
    const std::size_t task = next_;
    if (!error_) {
      lock.unlock();
      std::exception_ptr failure;
      try {
        runTask(task);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !error_) error_ = failure;
    }
    ++next_;
    taskDone_.notify_all();
  }
}

}  // namespace ringsync
