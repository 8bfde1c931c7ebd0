// How a rank waits while a transfer it polls for has not progressed: spin briefly, then yield the
// core, then sleep in short steps, measured in time since the wait last made progress.
//
// Why not spin throughout: when ranks share cores with other work, a busy-polling rank takes the
// CPU from the very thing it waits for. Across nodes that is the kernel's network processing
// (softirq work deferred to ksoftirqd, an ordinary thread competing with the ranks): measured with
// two simulated hosts on 2 shared cores, an 8 B all-reduce took 1.6-3.9 ms with spinning ranks
// against ~40 us with yielding ones. On one node it is the peer rank (more ranks than cores) or
// the trainer's compute threads while the GradientAverager's progress thread waits.
// Why not yield from the first poll: a reply within a few microseconds (shared memory, a fast
// link) is then found at once. Why sleep at all: sched_yield keeps the waiter runnable, so a
// long wait (a slow peer, backward still running elsewhere) would still take half a core.
// Sleeping costs a wake-up delay of ~50-100 us, paid only once a wait is already that long.
#pragma once

#include <chrono>

namespace ringsync::detail {

struct IdleWaitPolicy {
  bool spinOnly = false;                         // dedicated cores: never yield or sleep
  std::chrono::nanoseconds spinFor{20'000};      // then yield
  std::chrono::nanoseconds yieldFor{1'000'000};  // then sleep
  std::chrono::nanoseconds sleepStep{50'000};
};

class IdleWait {
 public:
  explicit IdleWait(const IdleWaitPolicy& policy) : policy_(policy) {}

  // One idle poll: spins, yields or sleeps by how long the wait has gone without progress.
  // The first kPollsBeforeClock polls of a wait read no clock at all: a small call on one node
  // waits a few hundred nanoseconds for its peer every time, and reading the clock (~25-50 ns
  // here) at the start of each such wait cost 8 B all-reduces ~25% (0.24 -> 0.31 us at np=2).
  // After that the clock is read every kPollsPerClockRead polls while spinning.
  static constexpr unsigned kPollsBeforeClock = 128;
  void idle() {
    if (policy_.spinOnly) return;
    if (polls_ < kPollsBeforeClock) {
      ++polls_;
      return;
    }
    if (!idling_) {
      idling_ = true;
      since_ = std::chrono::steady_clock::now();
      return;
    }
    if (!pastSpin_ && ++polls_ % kPollsPerClockRead != 0) return;
    const std::chrono::nanoseconds idleFor = std::chrono::steady_clock::now() - since_;
    if (idleFor < policy_.spinFor) return;
    pastSpin_ = true;
    giveWay(idleFor);
  }
  void progressed() {
    idling_ = pastSpin_ = false;
    polls_ = 0;
  }

 private:
  static constexpr unsigned kPollsPerClockRead = 16;
  void giveWay(std::chrono::nanoseconds idleFor) const;

  IdleWaitPolicy policy_;
  bool idling_ = false;
  bool pastSpin_ = false;
  unsigned polls_ = 0;
  std::chrono::steady_clock::time_point since_{};
};

}  // namespace ringsync::detail
