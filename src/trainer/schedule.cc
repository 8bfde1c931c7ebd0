#include "schedule.h"

#include <algorithm>
#include <cmath>

namespace ringsync::trainer {

Share shareOf(std::size_t rows, int rank, int ranks) {
  const std::size_t n = static_cast<std::size_t>(ranks);
  const std::size_t r = static_cast<std::size_t>(rank);
  const std::size_t base = rows / n;
  const std::size_t extra = rows % n;
  return {r * base + std::min(r, extra), base + (r < extra ? 1 : 0)};
}

std::size_t batchesPerEpoch(std::size_t samples, std::size_t globalBatch) {
  return (samples + globalBatch - 1) / globalBatch;
}

std::size_t batchRows(std::size_t samples, std::size_t globalBatch, std::size_t batch) {
  const std::size_t begin = batch * globalBatch;
  return begin >= samples ? 0 : std::min(globalBatch, samples - begin);
}

float learningRateAt(const SgdSettings& sgd, std::size_t step, std::size_t totalSteps) {
  const double base = sgd.learningRate;
  if (step < sgd.warmupSteps) {
    return static_cast<float>(base * static_cast<double>(step + 1) / static_cast<double>(sgd.warmupSteps));
  }
  if (sgd.schedule == LrSchedule::kConstant || totalSteps <= sgd.warmupSteps) return static_cast<float>(base);
  const double kPi = 3.141592653589793;
  const double progress = static_cast<double>(std::min(step, totalSteps) - sgd.warmupSteps) /
                          static_cast<double>(totalSteps - sgd.warmupSteps);
  return static_cast<float>(base * 0.5 * (1.0 + std::cos(kPi * progress)));
}

}  // namespace ringsync::trainer
