// Everything one training run is configured with (what the command line sets), with the defaults
// that reach the accuracy target on Fashion-MNIST.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringsync::trainer {

enum class Device { kCpu, kGpu, kAuto };
enum class LrSchedule { kConstant, kCosine };

const char* deviceName(Device device);
const char* lrScheduleName(LrSchedule schedule);

struct SgdSettings {
  float learningRate = 0.05f;
  float momentum = 0.9f;
  float weightDecay = 0.0f;  // L2 term added to every parameter's gradient (PyTorch's weight_decay)
  LrSchedule schedule = LrSchedule::kCosine;
  std::size_t warmupSteps = 0;  // linear ramp from lr/warmup to lr
};

struct TrainerConfig {
  // Data: Fashion-MNIST from dataDir, or a synthetic set when syntheticSamples > 0.
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  std::size_t syntheticSamples = 0;      // training samples of the synthetic set
  std::size_t syntheticTestSamples = 0;  // 0: syntheticSamples / 5 (at least 1)

  std::vector<std::size_t> layers = {784, 256, 128, 10};  // input, hidden..., classes
  std::uint64_t seed = 1;                                 // initial weights, shuffled order and synthetic data

  std::size_t epochs = 20;
  std::size_t globalBatch = 128;  // samples per step over all ranks
  std::size_t perRankBatch = 0;   // > 0: globalBatch = perRankBatch x ranks (weak scaling)
  std::size_t maxSteps = 0;       // > 0: stop after this many steps in total (counting resumed ones)
  SgdSettings sgd;

  Device device = Device::kAuto;
  int blasThreads = 1;  // OpenBLAS threads per rank
  // Start gradient buckets during backward; unset: where that gains (GradientAveragerOptions::overlap).
  std::optional<bool> overlap;
  bool fp16Wire = false;  // host gradients as float16 on the wire (Horovod's Compression.fp16)
  bool shard = false;     // ZeRO-1/2: reduce-scatter, update this rank's shard, all-gather

  std::size_t printEvery = 100;         // steps between progress lines (0: none)
  std::size_t replicaCheckEvery = 200;  // steps between replica checks (0: only at the end)
  bool evaluateEachEpoch = true;        // test accuracy after every epoch (always at the end)
  std::string jsonPath;
  std::string timelinePath;  // --timeline: RINGSYNC_TIMELINE for this run ("" keeps the environment's)
  std::string checkpointPath;
  std::size_t checkpointEvery = 0;  // steps between checkpoints (0: after every epoch)
  bool resume = false;
  bool quiet = false;  // no progress lines or summary

  // The global batch for `ranks` ranks (perRankBatch wins when set).
  std::size_t effectiveGlobalBatch(int ranks) const;
  // Raises ConfigError naming the option when a value is out of range.
  void validate() const;
};

}  // namespace ringsync::trainer
