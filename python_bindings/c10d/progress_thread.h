// The one thread that runs a process group's collectives, in the order the caller issued them.
// Every rank issues them to ringsync in the same order (the order torch and DDP already keep)
// while the caller goes on: DDP's backward computes the next gradients while a bucket is being
// all-reduced. Knows nothing of torch: a job is two closures.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace ringsync::torch_backend {

struct ProgressJob {
  // Runs the collective; never throws (a failure is kept for `complete`). Runs with no other
  // job of this thread running, so one Communicator is used by one thread at a time.
  std::function<void()> execute;
  // Publishes the outcome (completes the Work and its future). Runs after `execute`, outside every
  // lock: DDP's callbacks run here and may issue the next collective.
  std::function<void()> complete;
};

class ProgressThread {
 public:
  ProgressThread();
  ~ProgressThread();  // close()
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;

  // Queues `job`. runHereIfIdle: the caller waits for the result at once (torch's asyncOp=false);
  // when nothing is queued or running, the job then runs on the caller's thread before submit
  // returns: same order, and the two thread hand-offs (most of a small collective's time) saved.
  // Throws ringsync::AbortedError after close().
  void submit(ProgressJob job, bool runHereIfIdle);

  // Lets the queued jobs finish, then stops the thread. Idempotent; from the thread itself (a
  // callback dropping the last reference to the backend) it only asks the thread to stop.
  void close() noexcept;
  bool closed() const;

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
  static void run(const std::shared_ptr<State>& state);
  static void runJob(State& state, ProgressJob& job);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace ringsync::torch_backend
