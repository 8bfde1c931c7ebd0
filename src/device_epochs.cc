#include "device_epochs.h"

#include <atomic>

namespace ringsync::detail {
namespace {
std::atomic<int> stepsInFlight{0};
}  // namespace

void DeviceEpochs::averagerStepBegins() noexcept { stepsInFlight.fetch_add(1); }
void DeviceEpochs::averagerStepEnds() noexcept { stepsInFlight.fetch_sub(1); }
int DeviceEpochs::averagerStepsInFlight() noexcept { return stepsInFlight.load(); }

}  // namespace ringsync::detail
