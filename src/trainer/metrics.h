// What a run measures and reports: step statistics summed over a window of steps and over the
// ranks (one small all-reduce when a line is printed), per-epoch records, the final report, the
// progress line and summary rank 0 prints, and the --json file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringsync/communicator.h"
#include "config.h"

namespace ringsync::trainer {

// Sums of one rank's steps (or of all ranks' after reduce()).
struct StepStats {
  double lossSum = 0;
  double correct = 0;
  double samples = 0;
  double stepSeconds = 0;  // whole steps: batch gather, forward, backward, synchronize, update
  double waitSeconds = 0;  // blocked in the gradient synchronisation (--shard: and the parameter gathers)
  double steps = 0;        // steps counted (each rank counts each step once)

  void add(const StepStats& other);
  StepStats reduce(Communicator& comm) const;  // collective: sums over the ranks

  double loss() const { return samples > 0 ? lossSum / samples : 0; }
  double accuracy() const { return samples > 0 ? correct / samples : 0; }
  // Global samples per second, taking a step's duration as the ranks' mean (of a reduced sum).
  double samplesPerSecond(int ranks) const { return stepSeconds > 0 ? samples * ranks / stepSeconds : 0; }
  double waitShare() const { return stepSeconds > 0 ? waitSeconds / stepSeconds : 0; }
};

struct Evaluation {
  double loss = 0;
  double accuracy = 0;
  std::uint64_t correct = 0;
  std::uint64_t samples = 0;
};

struct EpochRecord {
  std::size_t epoch = 0;  // 1-based
  std::size_t steps = 0;  // steps of this epoch run by this process (fewer when resumed or capped)
  double trainLoss = 0, trainAccuracy = 0, samplesPerSecond = 0, waitShare = 0, seconds = 0;
  bool evaluated = false;
  Evaluation test;
};

struct RunReport {
  int ranks = 1;
  std::string device, model, data, sync;
  std::size_t parameters = 0, trainSamples = 0, testSamples = 0, globalBatch = 0, epochs = 0;
  std::size_t firstStep = 0, lastStep = 0;  // steps [firstStep, lastStep) ran in this process
  TrainerConfig config;
  std::vector<EpochRecord> epochRecords;
  Evaluation finalTest;
  double finalTrainLoss = 0;
  double trainSeconds = 0;               // summed step time (mean over ranks), without evaluation or checkpoints
  double totalSeconds = 0;               // wall time of Trainer::run
  double samplesPerSecond = 0;           // over the steps after the first few (warm-up)
  double waitShare = 0;                  // of step time, blocked in the gradient synchronisation
  double stepSeconds = 0;                // mean step time (over ranks and steps) after the warm-up
  bool sharded = false;                  // --shard
  std::size_t wireBytesPerStep = 0;      // bytes each rank sends per step (the ring's count)
  std::size_t optimizerStateBytes = 0;   // momentum bytes per rank (the largest rank's)
  std::size_t replicatedStateBytes = 0;  // ... what a replica holds: every parameter's
};

std::string formatProgress(std::size_t epoch, std::size_t epochs, std::size_t step, const StepStats& window, int ranks);
std::string formatEpoch(const EpochRecord& record, std::size_t epochs);
std::string formatSummary(const RunReport& report);
std::string reportJson(const RunReport& report);

}  // namespace ringsync::trainer
