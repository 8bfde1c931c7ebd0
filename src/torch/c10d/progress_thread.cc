#include "progress_thread.h"

#include <algorithm>
#include <utility>

#include "ringsync/errors.h"

namespace ringsync::torch_backend {

namespace {

// The lane this thread runs completions for; -1 on every other thread.
thread_local int currentLane = -1;

}  // namespace

CompletionPool::CompletionPool() : state_(std::make_shared<State>()) {}

CompletionPool::~CompletionPool() { close(); }

std::size_t CompletionPool::laneForWorkIssuedHere() {
  return std::min<std::size_t>(static_cast<std::size_t>(currentLane + 1), kLanes - 1);
}

void CompletionPool::post(std::function<void()> completion, std::size_t lane) {
  lane = std::min(lane, kLanes - 1);
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.closing) {
    lock.unlock();
    completion();
    return;
  }
  s.queues[lane].push_back(std::move(completion));
  if (!threads_[lane].joinable()) {
    threads_[lane] = std::thread([state = state_, lane] { run(state, lane); });  // under the lock: close() joins it
    return;
  }
  lock.unlock();
  s.wake[lane].notify_one();
}

void CompletionPool::run(const std::shared_ptr<State>& state, std::size_t lane) {
  currentLane = static_cast<int>(lane);
  State& s = *state;
  std::unique_lock<std::mutex> lock(s.mutex);
  for (;;) {
    s.wake[lane].wait(lock, [&s, lane] { return s.closing || !s.queues[lane].empty(); });
    if (s.queues[lane].empty()) return;  // closing, and everything queued has run
    std::function<void()> completion = std::move(s.queues[lane].front());
    s.queues[lane].pop_front();
    lock.unlock();
    completion();
    completion = nullptr;  // its tensors and callbacks go now, outside the lock
    lock.lock();
  }
}

void CompletionPool::close() noexcept {
  std::array<std::thread, kLanes> threads;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->closing = true;
    threads.swap(threads_);
  }
  for (std::condition_variable& wake : state_->wake) wake.notify_all();
  // Lane by lane from the first: a lane's completions may still be waiting for the next lane's.
  for (std::thread& thread : threads) {
    if (!thread.joinable()) continue;
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();  // its loop holds the state and ends when its queue is empty
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
  job.lane = CompletionPool::laneForWorkIssuedHere();
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
  completions.post(std::move(job.complete), job.lane);
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
