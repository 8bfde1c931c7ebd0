// The caller's autograd and inference modes, applied where a collective's tensor copies run.
// A collective's copies (a non-contiguous tensor's result copied back, an all-gather's outputs
// filled) run on whichever thread executes its job: the caller's when it runs inline, the
// progress thread otherwise, whose modes are a fresh thread's (grad enabled, no inference mode).
// Without this, a leaf requiring grad written under no_grad, or an inference tensor written
// under inference_mode, succeeded or raised depending on the queue.
#pragma once

#include <optional>
#include <thread>

#include <c10/core/AutogradState.h>
#include <c10/core/InferenceMode.h>

namespace ringsync::torch_backend {

class CallerModes {
 public:
  CallerModes() : autograd_(c10::AutogradState::get_tls_state()), caller_(std::this_thread::get_id()) {}

  // Makes the captured modes this thread's while alive (nothing on the caller's own thread).
  class Applied {
   public:
    explicit Applied(const CallerModes& modes) {
      if (std::this_thread::get_id() == modes.caller_) return;
      inference_.emplace(modes.autograd_.get_inference_mode());  // its dispatch keys, or normal mode's
      previous_ = c10::AutogradState::get_tls_state();
      c10::AutogradState::set_tls_state(modes.autograd_);  // grad mode exactly as the caller had it
    }
    ~Applied() {
      if (previous_) c10::AutogradState::set_tls_state(*previous_);
    }
    Applied(const Applied&) = delete;
    Applied& operator=(const Applied&) = delete;

   private:
    std::optional<c10::InferenceMode> inference_;  // destroyed after previous_ is restored
    std::optional<c10::AutogradState> previous_;
  };

 private:
  c10::AutogradState autograd_;
  std::thread::id caller_;
};

}  // namespace ringsync::torch_backend
