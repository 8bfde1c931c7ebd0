#include "progress_thread.h"

#include <utility>

#include "ringsync/errors.h"

namespace ringsync::torch_backend {

CompletionPool::CompletionPool() : state_(std::make_shared<State>()) {}

CompletionPool::~CompletionPool() { close(); }

void CompletionPool::post(std::function<void()> completion) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.closing) {
    lock.unlock();
    completion();
    return;
  }
  s.queue.push_back(std::move(completion));
  if (s.idle >= s.queue.size() || s.threads >= kMaxThreads) {
    lock.unlock();
    s.wake.notify_one();
    return;
  }
  // Every thread is busy (possibly inside a callback that waits for this very completion's
  // collective): one more takes it.
  ++s.threads;
  ++s.idle;  // counted idle until it takes its first completion
  threads_.emplace_back([state = state_] { run(state); });  // under the lock: close() joins every one
}

void CompletionPool::run(const std::shared_ptr<State>& state) {
  State& s = *state;
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.wake.wait(lock, [&s] { return s.closing || !s.queue.empty(); });
    if (s.queue.empty()) break;  // closing, and everything queued has run
    std::function<void()> completion = std::move(s.queue.front());
    s.queue.pop_front();
    --s.idle;
    lock.unlock();
    completion();
    completion = nullptr;  // its tensors and callbacks go now, outside the lock
    lock.lock();
    ++s.idle;
  }
  --s.threads;
  --s.idle;
}

void CompletionPool::close() noexcept {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->closing = true;
    threads.swap(threads_);
  }
  state_->wake.notify_all();
  for (std::thread& thread : threads) {
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();  // its loop holds the state and ends when the queue is empty
    } else {
      thread.join();
    }
  }
}

ProgressThread::ProgressThread(std::shared_ptr<CompletionPool> completions)
    : state_(std::make_shared<State>()), completions_(std::move(completions)) {
  thread_ = std::thread([state = state_, completions = completions_] { run(state, completions); });
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
  job.complete();  // the caller waits for it anyway: no hand-off
}

void ProgressThread::run(const std::shared_ptr<State>& state, const std::shared_ptr<CompletionPool>& completions) {
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
    runJob(s, job, *completions);
  }
}

void ProgressThread::runJob(State& s, ProgressJob& job, CompletionPool& completions) {
  {
    std::lock_guard<std::mutex> executing(s.executing);
    job.execute();
  }
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    --s.pending;
  }
  completions.post(std::move(job.complete));
  job = ProgressJob{};  // the job's tensors go now, not when the next job arrives
}

void ProgressThread::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->closing = true;
  }
  state_->wake.notify_one();
  if (thread_.joinable()) {
    if (thread_.get_id() == std::this_thread::get_id()) {
      thread_.detach();  // the loop keeps its own reference to the state and ends when the queue is empty
    } else {
      thread_.join();
    }
  }
  completions_->close();
}

bool ProgressThread::closed() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->closing;
}

}  // namespace ringsync::torch_backend
