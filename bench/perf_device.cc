// Device buffers and CUDA-event timing for --backend nccl|staged. Compiled into every build; the
// CUDA branch only when ringsync itself was built with CUDA (RINGSYNC_WITH_CUDA), so a host-only
// build still links and answers "not built with CUDA" instead of failing to compile.
#include <stdexcept>
#include <string>

#include "perf_buffers.h"
#include "ringsync/version.h"

#if RINGSYNC_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ringsync::bench {

#if RINGSYNC_WITH_CUDA
namespace {

void checkCuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(code) + ": " +
                             cudaGetErrorString(code));
}

class DeviceMemory final : public PerfMemory {
 public:
  explicit DeviceMemory(std::size_t bytes) { checkCuda(cudaMalloc(&data_, bytes > 0 ? bytes : 1), "cudaMalloc"); }
  ~DeviceMemory() override { cudaFree(data_); }
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* data() override { return data_; }
  void upload(const void* host, std::size_t bytes) override {
    checkCuda(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (host to device)");
    // A pageable cudaMemcpy may return before its DMA lands, and it is ordered only on the legacy
    // default stream, which the bench's non-blocking stream does not wait for: without this the
    // collective can read the buffer before the fill (-c 1 then reports wrong values).
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  }
  void download(void* host, std::size_t bytes) override {
    checkCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // the same, for work on other streams
    checkCuda(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (device to host)");
  }

 private:
  void* data_ = nullptr;
};

// Times work enqueued on its own stream between two events, as nccl-tests does.
class DeviceStream final : public PerfStream {
 public:
  DeviceStream() {
    checkCuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    checkCuda(cudaEventCreate(&start_), "cudaEventCreate");
    checkCuda(cudaEventCreate(&stop_), "cudaEventCreate");
  }
  ~DeviceStream() override {
    cudaEventDestroy(stop_);
    cudaEventDestroy(start_);
    cudaStreamDestroy(stream_);
  }
  DeviceStream(const DeviceStream&) = delete;
  DeviceStream& operator=(const DeviceStream&) = delete;

  CUstream_st* stream() override { return stream_; }
  void copy(void* to, const void* from, std::size_t bytes) override {
    checkCuda(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }
  void start() override { checkCuda(cudaEventRecord(start_, stream_), "cudaEventRecord"); }
  double stopSeconds() override {
    checkCuda(cudaEventRecord(stop_, stream_), "cudaEventRecord");
    checkCuda(cudaEventSynchronize(stop_), "cudaEventSynchronize");
    float milliseconds = 0;
    checkCuda(cudaEventElapsedTime(&milliseconds, start_, stop_), "cudaEventElapsedTime");
    return milliseconds / 1000.0;
  }
  void synchronize() override { checkCuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr;
  cudaEvent_t stop_ = nullptr;
};

}  // namespace

std::string useDevice(int device) {
  if (device < 0)
    return "no usable GPU (Communicator::cudaDevice() is -1: no CUDA device is visible, or RINGSYNC_CUDA_DEVICE "
           "names one beyond those visible)";
  const cudaError_t code = cudaSetDevice(device);
  if (code != cudaSuccess)
    return "cudaSetDevice(" + std::to_string(device) + ") failed: " + cudaGetErrorName(code) + ": " +
           cudaGetErrorString(code);
  return "";
}

std::unique_ptr<PerfMemory> makeDeviceMemory(std::size_t bytes) { return std::make_unique<DeviceMemory>(bytes); }
std::unique_ptr<PerfStream> makeDeviceStream() { return std::make_unique<DeviceStream>(); }

#else  // ringsync built without CUDA

std::string useDevice(int) {
  return "this ringsync was built without CUDA (RINGSYNC_WITH_CUDA=0), so it has no device backends";
}
std::unique_ptr<PerfMemory> makeDeviceMemory(std::size_t) { throw std::logic_error("no CUDA in this build"); }
std::unique_ptr<PerfStream> makeDeviceStream() { throw std::logic_error("no CUDA in this build"); }

#endif

}  // namespace ringsync::bench
