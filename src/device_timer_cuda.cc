// CUDA events for the timeline's device rows. The development machines have no GPU: this file is
// compiled and linked there, never run.
//
// A pool of timing events is created with the first mark, on the device current then, together
// with a reference event: it is recorded on the first mark's stream and waited for once, and the
// host clock read right after gives its time; every later mark is the reference's time plus
// cudaEventElapsedTime from it (error: the host's wake-up after the wait, a few microseconds).
#include <vector>

#include <cuda_runtime_api.h>

#include "clock_offset.h"
#include "cuda/device_memory.h"
#include "device_timer.h"

namespace ringsync::detail {
namespace {

class CudaDeviceTimer final : public DeviceTimer {
 public:
  explicit CudaDeviceTimer(std::int64_t clockOffsetNs) : clockOffsetNs_(clockOffsetNs) {}

  std::int64_t mark(CUstream_st* stream) noexcept override {
    if (broken_) return -1;
    try {
      if (pool_.empty()) start(stream);
      const std::int64_t id = next_++;
      pool_[static_cast<std::size_t>(id % kMarks)].record(stream);
      return id;
    } catch (...) {
      broken_ = pool_.empty();  // no pool: do not retry on every call
      return -1;                // the timeline loses a device row; the collective itself is unaffected
    }
  }

  std::int64_t resolve(std::int64_t id) noexcept override {
    if (id < 0 || id >= next_ || id + kMarks < next_ || !reference_) return 0;
    try {
      const cuda::Event& event = pool_[static_cast<std::size_t>(id % kMarks)];
      event.synchronize();
      return referenceNs_ + static_cast<std::int64_t>(static_cast<double>(event.millisecondsSince(*reference_)) * 1e6);
    } catch (...) {
      return 0;
    }
  }

 private:
  static constexpr std::int64_t kMarks = 4096;  // two per device collective: the latest 2048 calls

  void start(CUstream_st* stream) {
    std::vector<cuda::Event> pool;
    pool.reserve(static_cast<std::size_t>(kMarks));
    for (std::int64_t i = 0; i < kMarks; ++i) pool.emplace_back(true);
    reference_ = std::make_unique<cuda::Event>(true);
    reference_->record(stream);
    reference_->synchronize();
    referenceNs_ = steadyNowNs() + clockOffsetNs_;
    pool_ = std::move(pool);
  }

  std::int64_t clockOffsetNs_;
  std::vector<cuda::Event> pool_;
  std::unique_ptr<cuda::Event> reference_;
  std::int64_t referenceNs_ = 0;
  std::int64_t next_ = 0;
  bool broken_ = false;
};

}  // namespace

std::unique_ptr<DeviceTimer> makeDeviceTimer(std::int64_t clockOffsetNs) {
  return std::make_unique<CudaDeviceTimer>(clockOffsetNs);
}

}  // namespace ringsync::detail
