#include "config.h"

#include <cmath>

#include "errors.h"

namespace ringsync::trainer {

const char* deviceName(Device device) {
  switch (device) {
    case Device::kCpu: return "cpu";
    case Device::kGpu: return "gpu";
    case Device::kAuto: return "auto";
  }
  return "?";
}

const char* lrScheduleName(LrSchedule schedule) { return schedule == LrSchedule::kCosine ? "cosine" : "constant"; }

std::size_t TrainerConfig::effectiveGlobalBatch(int ranks) const {
  return perRankBatch > 0 ? perRankBatch * static_cast<std::size_t>(ranks) : globalBatch;
}

void TrainerConfig::validate() const {
  if (layers.size() < 2) throw ConfigError("--layers needs at least an input and an output width");
  for (std::size_t width : layers) {
    if (width == 0) throw ConfigError("--layers: every width must be positive");
  }
  if (layers.back() < 2) throw ConfigError("--layers: the last width is the class count and must be at least 2");
  if (layers.back() > 256) throw ConfigError("--layers: at most 256 classes (labels are bytes)");
  if (globalBatch == 0) throw ConfigError("--batch must be positive");
  if (epochs == 0 && maxSteps == 0) throw ConfigError("--epochs must be positive");
  if (!(sgd.learningRate > 0) || !std::isfinite(sgd.learningRate)) throw ConfigError("--lr must be positive");
  if (!(sgd.momentum >= 0 && sgd.momentum < 1)) throw ConfigError("--momentum must be in [0, 1)");
  if (!(sgd.weightDecay >= 0) || !std::isfinite(sgd.weightDecay)) throw ConfigError("--weight-decay must be >= 0");
  if (blasThreads < 1) throw ConfigError("--threads must be at least 1");
  if (resume && checkpointPath.empty()) throw ConfigError("--resume needs --checkpoint FILE");
}

}  // namespace ringsync::trainer
