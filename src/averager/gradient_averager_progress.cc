// Where buckets run: on the progress thread as each completes (overlap), or all at once inside
// synchronize() (no overlap). Either way in launch order, and after the first failure of a step
// the remaining buckets are skipped on every rank alike (every rank raises the same fingerprint
// error on the same bucket; a timeout aborts the communicator anyway), and the failure is
// handed to synchronize() on the caller's thread, never to std::terminate.
#include "gradient_averager_impl.h"

namespace ringsync {

void GradientAverager::Impl::runBucket(std::size_t bucket) {
  const detail::TimelineSpan span(timeline_.get(), detail::SpanKind::kBucket, bucket);
  detail::BucketRunner& runner = buckets_[bucket].onDevice ? *deviceRunner_ : *hostRunner_;
  BucketTiming& timing = timings_[bucket];
  timing = BucketTiming{buckets_[bucket].bytes(), buckets_[bucket].members.size()};
  timing.queuedSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - readyAt_[bucket]).count();
  runner.run(bucket, comm_, timing);
}

std::exception_ptr GradientAverager::Impl::runAllBuckets() {
  readyAt_.assign(buckets_.size(), std::chrono::steady_clock::now());
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    try {
      runBucket(b);
    } catch (...) {
      return std::current_exception();
    }
  }
  return nullptr;
}

std::exception_ptr GradientAverager::Impl::waitForBuckets() {
  std::unique_lock<std::mutex> lock(mutex_);
  stepDone_.wait(lock, [&] { return next_ == buckets_.size(); });
  return error_;
}

void GradientAverager::Impl::progressLoop() noexcept {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto runnable = [&] { return next_ < buckets_.size() && pending_[next_] == 0; };
    workReady_.wait(lock, [&] { return stop_ || runnable(); });
    // Stopping (the averager is destroyed mid-step): first all-reduce every bucket that is already
    // complete. Every rank marked the same gradients, so every rank runs the same buckets; stopping
    // at once instead would leave a peer whose thread had already started the next one waiting.
    if (!runnable()) return;
    const std::size_t bucket = next_;
    const bool skip = error_ != nullptr;
    lock.unlock();
    std::exception_ptr failure;
    if (!skip) {
      try {
        runBucket(bucket);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    lock.lock();
    if (failure && !error_) error_ = failure;
    if (++next_ == buckets_.size()) stepDone_.notify_all();
  }
}

}  // namespace ringsync
