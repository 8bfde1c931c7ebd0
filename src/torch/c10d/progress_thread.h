// The one thread that runs a process group's collectives, in the order the caller issued them.
// Every rank issues them to ringsync in the same order (the order torch and DDP already keep)
// while the caller goes on: DDP's backward computes the next gradients while a bucket is being
// all-reduced. Knows nothing of torch: a job is two closures.
//
// A job's outcome is published (its future completed, which runs the future's callbacks) by a
// CompletionPool, never on the progress thread: a callback may wait for a collective it issues
// itself (PowerSGD's hook calls all_reduce(...).get_future().wait() inside its callback), which
// only the progress thread can run.
#pragma once

#include <array>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace ringsync::torch_backend {

// Threads that run completions, one lane after another. Completions of work issued by ordinary
// threads run on lane 0, one at a time in the order posted (the order the collectives ran, the
// same on every rank), so callbacks that issue collectives issue them in the same order on every
// rank. Work issued from inside a completion (a callback) completes on the next lane, so that
// callback may wait for it. A lane's thread starts with its first completion; work issued from
// lane kLanes - 1 completes there too (a callback eight levels deep must not wait for its own).
class CompletionPool {
 public:
  static constexpr std::size_t kLanes = 8;

  CompletionPool();
  ~CompletionPool();  // close()
  CompletionPool(const CompletionPool&) = delete;
  CompletionPool& operator=(const CompletionPool&) = delete;

  // The lane for the completion of work issued on this thread now: 0 from an ordinary thread, the
  // next one from inside a completion.
  static std::size_t laneForWorkIssuedHere();
  // Runs `completion` on `lane`'s thread; after close() on the caller's thread.
  void post(std::function<void()> completion, std::size_t lane);
  // Runs what is queued, then stops the threads. Idempotent; from a pool thread (a callback
  // dropping the last reference to the group) that thread is left to end by itself.
  void close() noexcept;

 private:
  struct State {
    std::mutex mutex;
    std::array<std::condition_variable, kLanes> wake;
    std::array<std::deque<std::function<void()>>, kLanes> queues;
    bool closing = false;
  };
  static void run(const std::shared_ptr<State>& state, std::size_t lane);

  std::shared_ptr<State> state_;
  std::array<std::thread, kLanes> threads_;  // guarded by state_->mutex; started on first use
};

struct ProgressJob {
  // Runs the collective; never throws (a failure is kept for `complete`). Runs with no other
  // job of this thread running, so one Communicator is used by one thread at a time.
  std::function<void()> execute;
  // Publishes the outcome (completes the Work's future). Runs after `execute`, outside every lock,
  // on a CompletionPool lane (or on the caller's thread, for a job run inline): DDP's callbacks run
  // here and may issue the next collective, or wait for one they issue.
  std::function<void()> complete;
  // The CompletionPool lane `complete` runs on (CompletionPool::laneForWorkIssuedHere() where the
  // job was issued; submit() sets it).
  std::size_t lane = 0;
};

class ProgressThread {
 public:
  explicit ProgressThread(std::shared_ptr<CompletionPool> completions = std::make_shared<CompletionPool>());
  ~ProgressThread();  // close()
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Queues `job`. runHereIfIdle: the caller waits for the result at once (torch's asyncOp=false);
  // when nothing is queued or running, the job then runs on the caller's thread before submit
  // returns: same order, and the two thread hand-offs (most of a small collective's time) saved.
  // Throws ringsync::AbortedError after close().
  void submit(ProgressJob job, bool runHereIfIdle);

  // Lets the queued jobs finish, stops the thread, then closes the completion pool (every
  // completion has run when it returns, unless called from a pool thread). Idempotent; from the
  // thread itself it only asks the thread to stop.
  void close() noexcept;
  bool closed() const;

  const std::shared_ptr<CompletionPool>& completions() const { return completions_; }

 private:
  // Shared with the thread: when the last reference to the backend goes in a callback on this
  // thread, the ProgressThread is destroyed under the running loop, which must outlive it.
  struct State {
    std::mutex mutex;  // guards everything below but `executing`
    std::condition_variable wake;
    std::deque<ProgressJob> queue;
    std::size_t pending = 0;  // queued or running, here or on a caller's thread
    bool closing = false;
    // Held while a job's `execute` runs, on this thread or inline on a caller's.
    std::mutex executing;
  };
  static void run(const std::shared_ptr<State>& state, const std::shared_ptr<CompletionPool>& completions);
  static void runJob(State& state, ProgressJob& job, CompletionPool& completions);

  std::shared_ptr<State> state_;
  std::shared_ptr<CompletionPool> completions_;
  std::thread thread_;
};

}  // namespace ringsync::torch_backend
