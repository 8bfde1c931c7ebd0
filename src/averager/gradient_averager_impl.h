// The state behind a GradientAverager and a ShardedGradientAverager: the plan (fixed at
// construction), the step in progress and the progress thread that launches each bucket as soon
// as backward has completed it.
//
// A step is a list of tasks run in order, the same on every rank:
//   replicated  task b < B:  all-reduce bucket b                        (B = the bucket count)
//   sharded     task b < B:  reduce-scatter bucket b; synchronize() waits for these
//               task B + k:  all-gather bucket B-1-k's parameters (forward order: the bucket that
//                            holds tensor 0 first), once all its parameters are marked updated
// Task t may run once every member of it was marked (pending_[t] == 0) and every task before it
// ran. With overlap the progress thread runs them; without, the caller's thread runs them where it
// waits for them (synchronize, waitForParameter, the gather's end).
//
// Threads: markReady/synchronize/markUpdated/waits run on the caller's thread. With overlap, only
// the progress thread uses the duplicated communicator (a Communicator is not thread-safe) and the
// runners; the two threads share the step counters below under mutex_.
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
#include "marked_places.h"
#include "shard_plan.h"
#include "src/logging.h"
#include "src/timeline.h"
#include "ringsync/errors.h"
#include "ringsync/gradient_averager.h"

namespace ringsync {

struct GradientAverager::Impl {
  // Replicated.
  Impl(const Communicator& comm, std::vector<GradientBuffer> gradients, const GradientAveragerOptions& options);
  // Sharded: agrees with the other ranks before returning (collective).
  Impl(const Communicator& comm, std::vector<GradientBuffer> gradients, std::vector<GradientBuffer> parameters,
       const GradientAveragerOptions& options);
  ~Impl();  // stops the progress thread after the task it is running; never throws

  // placeChecked: markReadyAt checked the gradient's new place already (moveGradient).
  void markReady(std::size_t index, CUstream_st* stream, bool placeChecked = false);
  // markReady for a gradient that lies at `data` now. A replicated averager's host gradient that
  // moved is reduced where it lies from this step on; a device gradient, or any of a sharded
  // averager's, must stay where it was registered (InvalidArgument naming it and both addresses).
  // Checked before anything is marked; empty gradients may lie anywhere.
  void markReadyAt(std::size_t index, const void* data, CUstream_st* stream);
  void moveGradient(std::size_t index, const void* data);
  // InvalidArgument naming both when a host gradient's place this step overlaps one already
  // marked in it (once any gradient moved; marked_places.h).
  void checkPlaceFree(std::size_t index, const void* data, const char* caller) const;
  void synchronize();
  void averageAll();
  // Sharded only (gradient_averager_gather.cc).
  void markUpdated(std::size_t index, CUstream_st* stream);
  // `onStream`: device parameters make `stream` wait for the gather instead of blocking the host.
  void waitForParameter(std::size_t index, CUstream_st* stream, bool onStream);
  void gatherParameters();
  ShardRange shardOf(int rank, std::size_t index, const char* caller) const;
  ShardRange shardOfPointer(const void* data) const;

  std::size_t bucketCount() const { return buckets_.size(); }
  std::size_t gatherTask(std::size_t bucket) const { return 2 * buckets_.size() - 1 - bucket; }
  std::size_t bucketOfTask(std::size_t task) const { return task < bucketCount() ? task : gatherTask(task); }

  // Caller's thread.
  void setUp(const GradientAveragerOptions& options);  // the plan's runners, the step's counters
  void ensureUsable() const;
  void ensureAgreed();  // the cross-rank check (once), then the progress thread starts
  void checkAllMarked() const;
  void checkIndex(std::size_t index, const char* caller) const;
  // Runs (without overlap) or waits for (with it) every task before `end`; the step's first error.
  std::exception_ptr advanceTo(std::size_t end);
  void finishStep(std::exception_ptr error, double seconds);           // replicated: ends the step
  void finishReduceScatter(std::exception_ptr error, double seconds);  // sharded: on to the update
  void endGather(const char* caller);  // sharded: waits for every gather, ends the step (raises its error)
  void resetStep();                    // every task pending again (no task may be running)
  void waitForDevice();                // the device runner's finishStep under the deadline (aborts on a timeout)
  void noteFailure(const Error& error);
  void shutdown() noexcept;
  // A wait the communicator did not see failed (device work past the deadline): abort it, as its
  // own timeouts do, so that NCCL lets go of the GPU and later calls raise AbortedError.
  void abortCommunicator(const std::string& reason) noexcept;

  // Progress thread (or the caller's, without overlap).
  void progressLoop() noexcept;
  void runTask(std::size_t task);  // one at a time; notes its timing

  Communicator comm_;  // the averager's own duplicate
  detail::Logger logger_;
  detail::AveragerSettings settings_;
  std::vector<detail::GradientSpec> gradients_;
  std::vector<detail::GradientSpec> parameters_;  // sharded only
  std::vector<detail::Bucket> buckets_;
  std::unique_ptr<detail::ShardPlan> shards_;  // sharded only
  std::vector<std::size_t> bucketOf_;
  std::vector<std::size_t> taskMembers_;  // members per task (pending_ starts each step from it)
  std::size_t taskCount_ = 0;             // B, or 2B when sharded
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
  detail::MarkedPlaces markedPlaces_;  // this step's marked host gradients, once any moved
  // Sharded: between synchronize() and the gather's end; parameters marked updated, and per bucket
  // how many of its parameters are still to be marked.
  bool gathering_ = false;
  std::vector<bool> updated_;
  std::size_t updatedCount_ = 0;
  std::vector<std::size_t> gatherPending_;
  bool gatherErrorRaised_ = false;  // a wait raised the gather's error already
  GradientAveragerStats stats_;
  std::vector<BucketTiming> timings_;   // this step's, per task, filled as tasks run
  std::vector<BucketTiming> lastStep_;  // the last completed step's (lastStepBuckets())

  // Shared with the progress thread.
  std::mutex mutex_;
  std::condition_variable workReady_;                           // a task became runnable, or stop_
  std::condition_variable taskDone_;                            // next_ advanced
  std::vector<std::size_t> pending_;                            // members of each task not yet marked this step
  std::size_t next_ = 0;                                        // next task to run this step
  std::vector<std::chrono::steady_clock::time_point> readyAt_;  // when each task became runnable
  std::exception_ptr error_;                                    // first failure this step; later tasks are skipped
  bool stop_ = false;
  std::thread thread_;

  // RINGSYNC_TIMELINE: the process's recorder (null when off), for markReady, buckets, synchronize.
  std::shared_ptr<detail::Timeline> timeline_;
};

}  // namespace ringsync
