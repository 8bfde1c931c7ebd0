// The state behind a GradientAverager: the plan (fixed at construction), the step in progress and
// the progress thread that launches each bucket as soon as backward has completed it.
//
// Threads: markReady/synchronize run on the caller's thread. With overlap, only the progress thread
// uses the duplicated communicator (a Communicator is not thread-safe) and the runners; the two
// threads share the step counters below under mutex_. Without overlap there is no second thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bucket_plan.h"
#include "gradient_averager_checks.h"
#include "gradient_averager_runner.h"
#include "src/logging.h"
#include "src/timeline.h"
#include "ringsync/errors.h"
#include "ringsync/gradient_averager.h"

namespace ringsync {

struct GradientAverager::Impl {
  Impl(const Communicator& comm, std::vector<GradientBuffer> gradients, const GradientAveragerOptions& options);
  ~Impl();  // stops the progress thread after the bucket it is running; never throws

  void markReady(std::size_t index, CUstream_st* stream);
  void synchronize();
  void averageAll();

  // Caller's thread.
  void ensureUsable() const;
  void ensureAgreed();  // the first call's cross-rank check, then the progress thread starts
  void checkAllMarked() const;
  std::exception_ptr runAllBuckets();   // without overlap: every bucket, here, in launch order
  std::exception_ptr waitForBuckets();  // with overlap: until the progress thread has run them all
  void finishStep(std::exception_ptr error, double seconds);
  void shutdown() noexcept;
  // A wait the communicator did not see failed (device work past the deadline): abort it, as its
  // own timeouts do, so that NCCL lets go of the GPU and later calls raise AbortedError.
  void abortCommunicator(const std::string& reason) noexcept;

  // Progress thread.
  void progressLoop() noexcept;
  void runBucket(std::size_t bucket);  // either thread, one at a time; notes its timing

  Communicator comm_;  // the averager's own duplicate
  detail::Logger logger_;
  detail::AveragerSettings settings_;
  std::vector<detail::GradientSpec> gradients_;
  std::vector<detail::Bucket> buckets_;
  std::vector<std::size_t> bucketOf_;
  std::vector<std::size_t> bucketMembers_;  // members per bucket (pending_ starts each step from it)
  std::unique_ptr<detail::BucketRunner> hostRunner_;
  std::unique_ptr<detail::BucketRunner> deviceRunner_;
  bool overlap_ = false;
  bool agreed_ = false;
  // Set once the averager is unusable; every later call raises it again (MismatchError for a
  // mismatched list, AbortedError after a failure that aborted the communicator).
  bool failed_ = false;
  ErrorCode failureCode_ = ErrorCode::kAborted;
  std::string failureMessage_;
  std::vector<bool> marked_;
  std::size_t markedCount_ = 0;
  GradientAveragerStats stats_;
  std::vector<BucketTiming> timings_;  // this step's, filled as buckets run
  std::vector<BucketTiming> lastStep_; // the last completed step's (lastStepBuckets())

  // Shared with the progress thread.
  std::mutex mutex_;
  std::condition_variable workReady_;  // a bucket became complete, or stop_
  std::condition_variable stepDone_;   // next_ reached the bucket count
  std::vector<std::size_t> pending_;   // members of each bucket not yet marked this step
  std::size_t next_ = 0;               // next bucket to launch this step
  std::vector<std::chrono::steady_clock::time_point> readyAt_;  // when each bucket became complete
  std::exception_ptr error_;           // first failure this step; later buckets are skipped
  bool stop_ = false;
  std::thread thread_;

  // RINGSYNC_TIMELINE: the process's recorder (null when off), for markReady, buckets, synchronize.
  std::shared_ptr<detail::Timeline> timeline_;
};

}  // namespace ringsync
