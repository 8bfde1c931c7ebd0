#include "stream_keepalive.h"

#include "ringsync/errors.h"
#include "ringsync/version.h"

#if RINGSYNC_WITH_CUDA
#include <chrono>
#include <thread>

#include <cuda_runtime_api.h>
#endif

namespace ringsync::python {

#if RINGSYNC_WITH_CUDA

namespace {
cudaEvent_t asEvent(void* event) { return static_cast<cudaEvent_t>(event); }

void check(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();
  throw BackendError(std::string(call) +
                     " failed while keeping a CUDA tensor alive for its collective: " + cudaGetErrorString(rc));
}
}  // namespace

void* StreamKeepAlive::takeEvent() {
  if (!idleEvents_.empty()) {
    void* event = idleEvents_.front();
    idleEvents_.pop_front();
    return event;
  }
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  return event;
}

void StreamKeepAlive::keep(ImportedArray array, CUstream_st* stream) {
  releaseCompleted();
  void* event = takeEvent();
  const cudaError_t rc = cudaEventRecord(asEvent(event), stream);
  if (rc != cudaSuccess) {
    idleEvents_.push_back(event);
    check(rc, "cudaEventRecord");
  }
  pending_.push_back({event, std::move(array)});
}

void StreamKeepAlive::releaseCompleted() noexcept {
  // Events complete in stream order only per stream: look at every one, not just the oldest.
  for (auto it = pending_.begin(); it != pending_.end();) {
    const cudaError_t state = cudaEventQuery(asEvent(it->event));
    if (state == cudaErrorNotReady) {
      cudaGetLastError();  // "not ready" must not become the caller's next launch error
      ++it;
      continue;
    }
    // Done, or failed (a device error): either way nothing more will run for this call.
    if (state != cudaSuccess) cudaGetLastError();
    idleEvents_.push_back(it->event);
    it = pending_.erase(it);
  }
}

void StreamKeepAlive::releaseAll(double timeoutSeconds) noexcept {
  const auto giveUp = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  releaseCompleted();
  while (!pending_.empty() && std::chrono::steady_clock::now() < giveUp) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
    releaseCompleted();
  }
  for (Pending& p : pending_) new ImportedArray(std::move(p.array));  // leaked on purpose (see the header)
  pending_.clear();
  for (void* event : idleEvents_) cudaEventDestroy(asEvent(event));
  idleEvents_.clear();
}

#else  // a build without CUDA has no device arrays

void StreamKeepAlive::keep(ImportedArray, CUstream_st*) {
  throw BackendError("a CUDA tensor reached a ringsync built without CUDA");
}
void StreamKeepAlive::releaseCompleted() noexcept {}
void StreamKeepAlive::releaseAll(double) noexcept { pending_.clear(); }

#endif

StreamKeepAlive::~StreamKeepAlive() { releaseAll(0); }

}  // namespace ringsync::python
