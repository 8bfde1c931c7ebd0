#include "device_probe.h"

#include <unistd.h>

#include <cuda_runtime_api.h>

namespace ringsync::detail {

bool gpuDriverPresent() {
  static const bool present = access("/dev/nvidiactl", F_OK) == 0 || access("/proc/driver/nvidia/version", F_OK) == 0 ||
                              access("/dev/dxg", F_OK) == 0;
  return present;
}

int visibleGpuCount() {
  static const int count = [] {
    if (!gpuDriverPresent()) return 0;
    int devices = 0;  // cudaGetDeviceCount leaves it untouched when it fails
    if (cudaGetDeviceCount(&devices) != cudaSuccess) {
      cudaGetLastError();  // clear the error so the caller's next CUDA call does not see it
      return 0;
    }
    return devices;
  }();
  return count;
}

}  // namespace ringsync::detail
