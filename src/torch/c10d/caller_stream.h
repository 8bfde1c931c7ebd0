// Where a collective's tensors live and which CUDA stream orders it. CUDA tensors run through
// ringsync's device path on the caller's current stream, captured at the call (as NCCL orders
// its kernels); the progress thread makes that stream current for its copies and for completing
// the future, so the future's events follow the collective. Host tensors have no stream.
// Without a CUDA build (of ringsync and of torch) a CUDA tensor is refused by name.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

struct CUstream_st;

namespace ringsync::torch_backend {

class CallerStream {
 public:
  // Checks the tensors (dense; all CPU, or all on one CUDA device) and captures the stream.
  CallerStream(const std::vector<at::Tensor>& tensors, const char* call);

  bool onDevice() const { return stream_.has_value(); }
  CUstream_st* cudaStream() const;           // null for host tensors
  std::vector<c10::Device> devices() const;  // for the Work's future

  // An event recorded on the captured stream after everything queued on it so far (the
  // collective and its copies); null for host tensors.
  std::shared_ptr<c10::Event> recordDone() const;
  // Makes the current stream of `done`'s device wait for it (what Work.wait() promises: a caller
  // that switched streams after the call still reads the results in order, as with NCCL).
  static void blockCurrentStream(const c10::Event& done);

  // Makes the captured stream current on this thread while alive (nothing for host tensors).
  class Current {
   public:
    explicit Current(const CallerStream& stream);
    ~Current();
    Current(const Current&) = delete;
    Current& operator=(const Current&) = delete;

   private:
    std::optional<c10::Stream> previous_;
  };

 private:
  std::optional<c10::Stream> stream_;
};

}  // namespace ringsync::torch_backend
