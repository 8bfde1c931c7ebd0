// A build without CUDA has no device work to time.
#include "device_timer.h"

namespace ringsync::detail {

std::unique_ptr<DeviceTimer> makeDeviceTimer(std::int64_t /*clockOffsetNs*/) { return nullptr; }

}  // namespace ringsync::detail
