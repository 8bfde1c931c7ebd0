#include "progress_thread.h"

#include <utility>

#include "ringsync/errors.h"

namespace ringsync::torch_backend {

ProgressThread::ProgressThread() : state_(std::make_shared<State>()) {
  thread_ = std::thread([state = state_] { run(state); });
}

ProgressThread::~ProgressThread() { close(); }

void ProgressThread::submit(ProgressJob job, bool runHereIfIdle) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.closing) throw AbortedError("ringsync backend: this process group was shut down");
  ++s.pending;
  if (!(runHereIfIdle && s.pending == 1)) {
    s.queue.push_back(std::move(job));
    lock.unlock();
    s.wake.notify_one();
    return;
  }
  // Taken before the state is unlocked: a job queued behind this one cannot start first.
  std::unique_lock<std::mutex> executing(s.executing);
  lock.unlock();
  job.execute();
  executing.unlock();
  {
    std::lock_guard<std::mutex> relock(s.mutex);
    --s.pending;
  }
  job.complete();
}

void ProgressThread::run(const std::shared_ptr<State>& state) {
  State& s = *state;
  for (;;) {
    ProgressJob job;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.wake.wait(lock, [&s] { return s.closing || !s.queue.empty(); });
      if (s.queue.empty()) return;  // closing, and everything queued has run
      job = std::move(s.queue.front());
      s.queue.pop_front();
    }
    runJob(s, job);
  }
}

void ProgressThread::runJob(State& s, ProgressJob& job) {
  {
    std::lock_guard<std::mutex> executing(s.executing);
    job.execute();
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    --s.pending;
  }
  job.complete();
  job = ProgressJob{};  // the job's tensors go now, not when the next job arrives
}

void ProgressThread::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->closing = true;
  }
  state_->wake.notify_one();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // the loop keeps its own reference to the state and ends when the queue is empty
  } else {
    thread_.join();
  }
}

bool ProgressThread::closed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->closing;
}

}  // namespace ringsync::torch_backend
