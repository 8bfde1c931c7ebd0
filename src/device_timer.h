// Device work on the timeline: the GPU runs a collective enqueued on a stream (NCCL) later than
// the host call that enqueued it, so its time comes from CUDA events recorded around it on that
// stream, placed on the common clock when the timeline is written. Implemented in
// device_timer_cuda.cc with CUDA; without CUDA there is no device work and no timer.
#pragma once

#include <cstdint>
#include <memory>

struct CUstream_st;

namespace ringsync::detail {

class DeviceTimer {
 public:
  virtual ~DeviceTimer() = default;
  // Records a mark on `stream` after the work enqueued on it so far; its id, or -1 on failure.
  // Events come from a pool created on the first mark: nothing is allocated per call after that.
  virtual std::int64_t mark(CUstream_st* stream) noexcept = 0;
  // When mark `id` was reached on the device, in ns on the common clock; 0 when unknown (never
  // recorded, reused by a newer mark, or a CUDA failure). Waits for the mark.
  virtual std::int64_t resolve(std::int64_t id) noexcept = 0;
};

// Null in a build without CUDA. `clockOffsetNs` turns this host's steady clock into the common one.
std::unique_ptr<DeviceTimer> makeDeviceTimer(std::int64_t clockOffsetNs);

}  // namespace ringsync::detail
