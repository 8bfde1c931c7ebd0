// Device arrays handed to a stream-ordered collective must outlive the work it enqueued (NCCL's
// kernel, the staged path's copies) on the caller's stream. Python may drop its last reference as
// soon as the call returns, and a caching allocator (torch's) then gives the memory to the next
// tensor while the collective still reads or writes it. A communicator keeps each such array here
// with an event recorded on the stream after the collective, and lets it go (with the GIL held)
// once the event has passed: checked at every later call and when the communicator is released.
// Builds without CUDA never see a device array: keep() is then never called.
#pragma once

#include <deque>

#include "array_view.h"

namespace ringsync::python {

class StreamKeepAlive {
 public:
  StreamKeepAlive() = default;
  ~StreamKeepAlive();  // releaseAll(0): whatever is still pending stays alive for good
  StreamKeepAlive(const StreamKeepAlive&) = delete;
  StreamKeepAlive& operator=(const StreamKeepAlive&) = delete;

  // Keeps `array` until `stream` passes this point. GIL held.
  void keep(ImportedArray array, CUstream_st* stream);
  // Drops the arrays whose events have passed. GIL held; never throws.
  void releaseCompleted() noexcept;
  // Waits up to `timeoutSeconds` for the pending events, then drops the arrays whose events passed.
  // The others (a stream that never gets there: a peer died inside NCCL) are leaked on purpose:
  // memory the device may still write must never be reused. GIL held; never throws.
  void releaseAll(double timeoutSeconds) noexcept;

 private:
  struct Pending {
    void* event;  // cudaEvent_t
    ImportedArray array;
  };
  void* takeEvent();  // a finished event from the pool, or a new one
  std::deque<Pending> pending_;
  std::deque<void*> idleEvents_;
};

}  // namespace ringsync::python
