// Device support in a build without CUDA (or before the pack kernels exist): every pointer is
// host memory, so no device runner is ever asked for.
#include "gradient_averager_runner.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

std::unique_ptr<BucketRunner> makeDeviceRunner(const RunnerContext&) {
  throw BackendError("GradientAverager: device gradients need a ringsync built with CUDA and NCCL");
}

}  // namespace ringsync::detail
