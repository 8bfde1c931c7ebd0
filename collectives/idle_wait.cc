#include "idle_wait.h"

#include <sched.h>

#include <thread>

namespace ringsync::detail {

void IdleWait::giveWay(std::chrono::nanoseconds idleFor) const {
  if (idleFor < policy_.spinFor + policy_.yieldFor) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(policy_.sleepStep);
  }
}

}  // namespace ringsync::detail
