// Whether this process can see a GPU, decided once per process. The first question is answered
// without the CUDA runtime (the NVIDIA driver's device nodes), so that host-only programs on
// machines without a GPU never call into CUDA at all; only when a driver is present is
// cudaGetDeviceCount asked, once.
#pragma once

namespace ringsync::detail {

// The NVIDIA kernel driver is loaded (/dev/nvidiactl, /proc/driver/nvidia/version, or WSL's /dev/dxg).
bool gpuDriverPresent();

// CUDA devices visible to this process; 0 without a driver or when cudaGetDeviceCount fails
// (error 35, "CUDA driver version is insufficient", is what a machine without a GPU answers).
int visibleGpuCount();

}  // namespace ringsync::detail
