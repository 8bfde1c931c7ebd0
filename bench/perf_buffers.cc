// Host memory and timing for the bench. The device versions live in perf_device.cc.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>

#include "perf_buffers.h"

namespace ringsync::bench {
namespace {

constexpr std::size_t kPageBytes = 4096;

class HostMemory final : public PerfMemory {
 public:
  explicit HostMemory(std::size_t bytes) {
    const std::size_t rounded = (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
    data_ = std::aligned_alloc(kPageBytes, rounded > 0 ? rounded : kPageBytes);
    if (!data_) throw std::bad_alloc();
    std::memset(data_, 0, rounded);  // touch every page now, not inside a timed iteration
  }
  ~HostMemory() override { std::free(data_); }
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;

  void* data() override { return data_; }
  void upload(const void* host, std::size_t bytes) override {
    if (host != data_) std::memcpy(data_, host, bytes);
  }
  void download(void* host, std::size_t bytes) override {
    if (host != data_) std::memcpy(host, data_, bytes);
  }

 private:
  void* data_ = nullptr;
};

class HostStream final : public PerfStream {
 public:
  CUstream_st* stream() override { return nullptr; }
  void copy(void* to, const void* from, std::size_t bytes) override { std::memcpy(to, from, bytes); }
  void start() override { start_ = std::chrono::steady_clock::now(); }
  double stopSeconds() override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void synchronize() override {}  // host calls have finished when they return

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<PerfMemory> makeHostMemory(std::size_t bytes) { return std::make_unique<HostMemory>(bytes); }
std::unique_ptr<PerfStream> makeHostStream() { return std::make_unique<HostStream>(); }

}  // namespace ringsync::bench
