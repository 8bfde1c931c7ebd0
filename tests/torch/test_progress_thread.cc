// The torch backend's progress thread (src/torch/c10d/progress_thread.h), without torch: it
// knows nothing of it, so its promises are checked here directly, and under ThreadSanitizer by
// `scripts/test.sh --tsan` (label `threads`). Jobs run one at a time in the order submitted,
// whether queued or run inline on an idle caller; the outcome is published after the job, outside
// the locks and off the progress thread (a completion may submit the next job, as DDP's callbacks
// do, and even wait for it, as PowerSGD's do); close() drains the queue, refuses later jobs with
// AbortedError, and may be called from a completion.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../../src/torch/c10d/progress_thread.h"
#include "ringsync/errors.h"

using ringsync::torch_backend::CompletionPool;
using ringsync::torch_backend::ProgressJob;
using ringsync::torch_backend::ProgressThread;

namespace {

// What the jobs did, in the order they did it.
struct Journal {
  std::mutex mutex;
  std::vector<int> executed, completed;
  std::vector<std::thread::id> executedOn, completedOn;
  std::atomic<int> running{0}, mostAtOnce{0};

  ProgressJob job(int id) {
    return {[this, id] {
              const int now = ++running;
              int seen = mostAtOnce.load();
              while (now > seen && !mostAtOnce.compare_exchange_weak(seen, now)) {
              }
              std::this_thread::sleep_for(std::chrono::microseconds(50));  // long enough to overlap if allowed
              {
                std::lock_guard<std::mutex> lock(mutex);
                executed.push_back(id);
                executedOn.push_back(std::this_thread::get_id());
              }
              --running;
            },
            [this, id] {
              std::lock_guard<std::mutex> lock(mutex);
              completed.push_back(id);
              completedOn.push_back(std::this_thread::get_id());
            }};
  }
};

std::vector<int> upTo(int n) {
  std::vector<int> ids;
  for (int i = 0; i < n; ++i) ids.push_back(i);
  return ids;
}


}  // namespace

TEST_CASE("progress thread: queued jobs run in order, one at a time, off the caller's thread", "[threads]") {
  Journal journal;
  {
    ProgressThread thread;
    for (int i = 0; i < 200; ++i) thread.submit(journal.job(i), false);
    thread.close();  // drains the queue
  }
  REQUIRE(journal.executed == upTo(200));
  REQUIRE(journal.completed == upTo(200));  // one lane: in order
  REQUIRE(journal.mostAtOnce == 1);
  for (const std::thread::id& id : journal.executedOn) REQUIRE(id != std::this_thread::get_id());
  // Completions never run on the thread that runs the jobs.
  for (std::size_t k = 0; k < journal.completedOn.size(); ++k)
    for (const std::thread::id& executor : journal.executedOn) REQUIRE(journal.completedOn[k] != executor);
}

TEST_CASE("progress thread: a synchronous job runs inline when idle, queued behind others otherwise", "[threads]") {
  Journal journal;
  ProgressThread thread;
  thread.submit(journal.job(0), true);  // idle: on this thread, finished before submit returns
  {
    std::lock_guard<std::mutex> lock(journal.mutex);
    REQUIRE(journal.completed == std::vector<int>{0});
    REQUIRE(journal.executedOn.back() == std::this_thread::get_id());
  }
  // A job that holds the thread until released, then a synchronous one: it must wait its turn.
  // (Released through an atomic, not a mutex held across submit(): the test adds no lock order.)
  std::atomic<bool> blockerStarted{false}, release{false};
  thread.submit({[&] {
                   blockerStarted = true;
                   while (!release) std::this_thread::yield();
                 },
                 [] {}},
                false);
  while (!blockerStarted) std::this_thread::yield();
  std::thread caller([&] { thread.submit(journal.job(1), true); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  {
    std::lock_guard<std::mutex> lock(journal.mutex);
    REQUIRE(journal.executed == std::vector<int>{0});  // job 1 did not overtake the blocker
  }
  release = true;
  caller.join();
  thread.close();
  REQUIRE(journal.executed == std::vector<int>{0, 1});
  REQUIRE(journal.mostAtOnce == 1);
}

TEST_CASE("progress thread: many callers, async and inline mixed, never two jobs at once", "[threads]") {
  Journal journal;
  std::atomic<int> nextId{0};
  {
    ProgressThread thread;
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c)
      callers.emplace_back([&, c] {
        for (int i = 0; i < 50; ++i) thread.submit(journal.job(nextId++), (i + c) % 3 == 0);
      });
    for (std::thread& caller : callers) caller.join();
    thread.close();
  }
  REQUIRE(journal.executed.size() == 200);
  REQUIRE(journal.completed.size() == 200);
  REQUIRE(journal.mostAtOnce == 1);
}

TEST_CASE("progress thread: a completion may submit the next job, and may close the thread", "[threads]") {
  Journal journal;
  auto thread = std::make_shared<ProgressThread>();
  std::mutex doneMutex;
  std::condition_variable doneSignal;
  bool done = false;
  // Job 0's completion queues job 1 (DDP issues the next bucket from a callback); job 1's
  // completion drops the last reference to the thread from the thread itself.
  ProgressJob second = journal.job(1);
  auto secondComplete = second.complete;
  second.complete = [&, secondComplete] {
    secondComplete();
    thread.reset();  // ~ProgressThread on its own thread: must not join itself
    std::lock_guard<std::mutex> lock(doneMutex);
    done = true;
    doneSignal.notify_one();
  };
  ProgressJob first = journal.job(0);
  auto firstComplete = first.complete;
  first.complete = [&, firstComplete, second] {
    firstComplete();
    thread->submit(second, false);
  };
  thread->submit(std::move(first), false);  // from here only the completions touch `thread`
  std::unique_lock<std::mutex> lock(doneMutex);
  REQUIRE(doneSignal.wait_for(lock, std::chrono::seconds(10), [&] { return done; }));
  REQUIRE(journal.executed == std::vector<int>{0, 1});
  REQUIRE(journal.completed == std::vector<int>{0, 1});
}

TEST_CASE("progress thread: a completion may wait for a job it submits (PowerSGD's hook)", "[threads]") {
  // Job 0's completion submits job 1 and waits until job 1 has executed and job 1's own completion
  // has run: with completions on the progress thread, or all on one thread, this waits for ever.
  ProgressThread thread;
  std::promise<void> secondCompleted;
  std::future<void> secondDone = secondCompleted.get_future();
  std::atomic<bool> waitedInCallback{false};
  std::promise<void> firstCompleted;
  thread.submit({[] {},
                 [&] {
                   thread.submit({[] {}, [&] { secondCompleted.set_value(); }}, false);
                   waitedInCallback = secondDone.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
                   firstCompleted.set_value();
                 }},
                false);
  REQUIRE(firstCompleted.get_future().wait_for(std::chrono::seconds(20)) == std::future_status::ready);
  REQUIRE(waitedInCallback);
  thread.close();
}

TEST_CASE(
    "completion pool: a lane runs its completions one at a time, in order; work issued inside one "
    "completes on the next lane",
    "[threads]") {
  CompletionPool pool;
  std::mutex mutex;
  std::vector<int> order;
  std::atomic<int> running{0}, mostAtOnce{0};
  std::vector<std::size_t> lanesSeen;
  for (int i = 0; i < 100; ++i)
    pool.post(
        [&, i] {
          const int now = ++running;
          if (now > mostAtOnce) mostAtOnce = now;
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          {
            std::lock_guard<std::mutex> lock(mutex);
            order.push_back(i);
            lanesSeen.push_back(CompletionPool::laneForWorkIssuedHere());
          }
          --running;
        },
        0);
  pool.close();
  REQUIRE(order == upTo(100));
  REQUIRE(mostAtOnce == 1);
  for (std::size_t lane : lanesSeen) REQUIRE(lane == 1);  // issued from lane 0: completes on lane 1
  REQUIRE(CompletionPool::laneForWorkIssuedHere() == 0);  // an ordinary thread
}

TEST_CASE("progress thread: after close, submit raises AbortedError and runs nothing", "[threads]") {
  Journal journal;
  ProgressThread thread;
  thread.close();
  REQUIRE(thread.closed());
  REQUIRE_THROWS_AS(thread.submit(journal.job(0), false), ringsync::AbortedError);
  REQUIRE_THROWS_AS(thread.submit(journal.job(1), true), ringsync::AbortedError);
  thread.close();  // idempotent
  REQUIRE(journal.executed.empty());
  REQUIRE(journal.completed.empty());
}
