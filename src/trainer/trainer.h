// The synchronous data-parallel training loop. Every rank holds a full replica; each step every
// rank computes its share of the global batch, hands each layer's gradient to the GradientAverager
// as soon as backward produced it, waits for the sum over the ranks and applies the same SGD update,
// so n ranks train exactly as one process would on the whole batch (up to float rounding).
// With --shard (ZeRO-1/2) the gradients are reduce-scattered instead, each rank applies the update
// to its shard only (and keeps momentum for it alone), and the shards are all-gathered, bucket by
// bucket, while the next forward waits for each layer: the same updates, 1/N of the state.
#pragma once

#include <chrono>
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <vector>

#include "ringsync/communicator.h"
#include "checkpoint.h"
#include "compute.h"
#include "config.h"
#include "dataset.h"
#include "gradient_sync.h"
#include "metrics.h"

namespace ringsync::trainer {

class Trainer {
 public:
  // Collective over `comm`: initialises the replicas (from the seed on rank 0, broadcast; or from
  // the checkpoint with config.resume) and sets up the GradientAverager. `progress` (rank 0 only,
  // may be null) receives progress lines. `data`, `comm` and `progress` must outlive the Trainer.
  Trainer(Communicator& comm, const TrainerConfig& config, const TrainTestData& data,
          std::unique_ptr<ComputeEngine> engine, std::ostream* progress);

  // Collective: trains until the last epoch or config.maxSteps, then checks the replicas,
  // evaluates and (with a checkpoint path) saves. Raises ReplicaMismatch if the replicas diverged.
  RunReport run();

  std::vector<float> parameters() const;  // host copy of this rank's replica (complete after run())
  // Host copy of the full momentum (every parameter's; collective with --shard: gathered).
  std::vector<float> momentum();
  std::size_t optimizerStateBytes() const;  // this rank's momentum
  const TrainingPosition& position() const { return position_; }
  std::size_t totalSteps() const { return totalSteps_; }

  Evaluation evaluate();  // collective: test loss and accuracy, each rank computing a shard

 private:
  using Clock = std::chrono::steady_clock;

  void initialise();
  bool runEpoch(std::size_t epoch);  // false once maxSteps is reached
  void trainStep(const std::vector<std::uint32_t>& order, std::size_t batch);
  void completeParameters();  // collective: the sharded gather in flight ends (a no-op replicated)
  void afterStep(std::size_t epoch);
  void checkReplicasNow();
  void save();
  EpochRecord finishEpoch(std::size_t epoch, bool evaluateNow, double seconds);
  bool reachedMaxSteps() const { return config_.maxSteps > 0 && position_.step >= config_.maxSteps; }
  void say(const std::string& line) const;

  Communicator& comm_;
  TrainerConfig config_;
  const TrainTestData& data_;
  ModelLayout layout_;
  std::unique_ptr<ComputeEngine> engine_;
  std::unique_ptr<GradientSync> sync_;  // after engine_: destroyed while its gradients exist
  std::ostream* progress_;

  std::size_t globalBatch_ = 0, batchesPerEpoch_ = 0, totalSteps_ = 0;
  TrainingPosition position_;
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
  StepStats window_, epoch_, timed_;  // since the last progress line / this epoch / after warm-up
  std::size_t stepsThisRun_ = 0;
  std::uint64_t savedStep_ = ~std::uint64_t{0};  // the step the last checkpoint holds
  double trainSeconds_ = 0;
};

}  // namespace ringsync::trainer
