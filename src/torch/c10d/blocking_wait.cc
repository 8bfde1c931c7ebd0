#include "blocking_wait.h"

#include <atomic>

namespace ringsync::torch_backend {
namespace {

std::atomic<BlockingWaitHook> hook{nullptr};

}  // namespace

void setBlockingWaitHook(BlockingWaitHook newHook) { hook.store(newHook); }

void blockingWait(const std::function<void()>& wait) {
  if (BlockingWaitHook installed = hook.load()) {
    installed(wait);
    return;
  }
  wait();
}

}  // namespace ringsync::torch_backend
