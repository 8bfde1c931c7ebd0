#include "trainer.h"

#include <algorithm>
#include <ostream>

#include "ringsync/errors.h"
#include "errors.h"
#include "optimizer_state.h"
#include "random.h"
#include "replica_check.h"
#include "schedule.h"

namespace ringsync::trainer {

namespace {
// The first steps of a process pay for first-touch page faults and thread start-up; they are left
// out of the throughput figure.
constexpr std::size_t kWarmupSteps = 3;

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

Trainer::Trainer(Communicator& comm, const TrainerConfig& config, const TrainTestData& data,
                 std::unique_ptr<ComputeEngine> engine, std::ostream* progress)
    : comm_(comm),
      config_(config),
      data_(data),
      layout_(config.layers),
      engine_(std::move(engine)),
      progress_(progress) {
  config_.validate();
  globalBatch_ = config_.effectiveGlobalBatch(comm_.size());
  batchesPerEpoch_ = batchesPerEpoch(data_.train.count, globalBatch_);
  totalSteps_ = config_.epochs * batchesPerEpoch_;
  if (data_.train.features != layout_.inputWidth() || data_.classes != layout_.classes()) {
    throw ConfigError("the data (" + std::to_string(data_.train.features) + " features, " +
                      std::to_string(data_.classes) + " classes) does not fit the model " + layout_.describe());
  }
  if (data_.train.count == 0 || data_.test.count == 0)
    throw ConfigError("the data set has no training or test samples");
  const std::size_t largestShare = shareOf(globalBatch_, 0, comm_.size()).count;
  if (engine_->maxRows() < largestShare) {
    throw Error(ErrorCode::kInternal, "compute engine sized for " + std::to_string(engine_->maxRows()) +
                                          " rows, a step needs " + std::to_string(largestShare));
  }
  x_.resize(engine_->maxRows() * layout_.inputWidth());
  y_.resize(engine_->maxRows());
  sync_ = makeGradientSync(comm_, layout_, engine_->gradients(), engine_->parameters(),
                           {config_.overlap, config_.fp16Wire, config_.shard});
  engine_->setOwnership(sync_->ownership(comm_.rank()));
  initialise();
}

void Trainer::initialise() {
  const std::size_t count = layout_.parameterCount();
  std::vector<float> parameters(count), momentum(stateCount(engine_->ownership()), 0.0f);
  if (config_.resume) {
    Checkpoint c = loadCheckpoint(comm_, config_.checkpointPath);
    const std::string file = "--resume: " + config_.checkpointPath;
    if (c.widths != layout_.widths()) {
      throw ConfigError(file + " holds model " + describeWidths(c.widths) + ", this run has " + layout_.describe());
    }
    if (c.seed != config_.seed || c.globalBatch != globalBatch_) {
      throw ConfigError(file + " was written with --seed " + std::to_string(c.seed) + " and global batch " +
                        std::to_string(c.globalBatch) + ", this run has " + std::to_string(config_.seed) + " and " +
                        std::to_string(globalBatch_) + " (the sample order would differ)");
    }
    if (c.position.batch > batchesPerEpoch_) throw ConfigError(file + " is past the end of an epoch of this data set");
    parameters = std::move(c.parameters);
    momentum = ownedMomentum(engine_->ownership(), layout_, c.momentum);  // the whole of it when replicated
    position_ = c.position;
  } else {
    if (comm_.rank() == 0) parameters = initialParameters(layout_, config_.seed);
    comm_.broadcast(parameters.data(), count, DataType::kFloat32, 0);
  }
  engine_->setState(parameters.data(), momentum.data());
}

RunReport Trainer::run() {
  const auto start = Clock::now();
  RunReport report;
  report.ranks = comm_.size();
  report.device = engine_->describe();
  report.model = layout_.describe();
  report.parameters = layout_.parameterCount();
  report.data = data_.source;
  report.trainSamples = data_.train.count;
  report.testSamples = data_.test.count;
  report.globalBatch = globalBatch_;
  report.epochs = config_.epochs;
  report.config = config_;
  report.firstStep = position_.step;
  for (std::size_t epoch = position_.epoch; epoch < config_.epochs && !reachedMaxSteps(); ++epoch) {
    const auto epochStart = Clock::now();
    const bool complete = runEpoch(epoch);
    if (complete) position_ = {epoch + 1, 0, position_.step};
    EpochRecord record = finishEpoch(epoch, complete && config_.evaluateEachEpoch, secondsSince(epochStart));
    if (record.steps > 0) report.epochRecords.push_back(record);
    if (complete && !config_.checkpointPath.empty() && config_.checkpointEvery == 0) save();
  }
  checkReplicasNow();
  const bool evaluatedNow = !report.epochRecords.empty() && report.epochRecords.back().evaluated &&
                            position_.batch == 0;
  report.finalTest = evaluatedNow ? report.epochRecords.back().test : evaluate();
  if (!config_.checkpointPath.empty()) save();
  report.lastStep = position_.step;
  report.sync = sync_->describe();  // after the steps: says how the last one travelled
  report.finalTrainLoss = report.epochRecords.empty() ? 0 : report.epochRecords.back().trainLoss;
  const StepStats timed = timed_.reduce(comm_);
  report.samplesPerSecond = timed.samplesPerSecond(comm_.size());
  report.waitShare = timed.waitShare();
  report.stepSeconds = timed.steps > 0 ? timed.stepSeconds / timed.steps : 0;
  report.sharded = sync_->sharded();
  report.wireBytesPerStep = sync_->wireBytesPerStep();
  std::uint64_t stateBytes = optimizerStateBytes();
  comm_.allreduce(&stateBytes, &stateBytes, 1, DataType::kUInt64, ReduceOp::kMax);
  report.optimizerStateBytes = stateBytes;
  report.replicatedStateBytes = layout_.parameterCount() * sizeof(float);
  double trainSeconds = trainSeconds_;
  comm_.allreduce(&trainSeconds, &trainSeconds, 1, DataType::kFloat64, ReduceOp::kMax);
  report.trainSeconds = trainSeconds;
  report.totalSeconds = secondsSince(start);
  return report;
}

bool Trainer::runEpoch(std::size_t epoch) {
  const std::vector<std::uint32_t> order = epochOrder(data_.train.count, config_.seed, epoch);
  const std::size_t first = epoch == position_.epoch ? position_.batch : 0;
  epoch_ = StepStats{};
  for (std::size_t batch = first; batch < batchesPerEpoch_; ++batch) {
    if (reachedMaxSteps()) return false;
    trainStep(order, batch);
    position_ = {epoch, batch + 1, position_.step + 1};
    afterStep(epoch);
  }
  return true;
}

void Trainer::trainStep(const std::vector<std::uint32_t>& order, std::size_t batch) {
  const std::size_t rows = batchRows(data_.train.count, globalBatch_, batch);
  const Share share = shareOf(rows, comm_.rank(), comm_.size());
  const auto start = Clock::now();
  gatherBatch(data_.train, order.data() + batch * globalBatch_ + share.begin, share.count, x_.data(), y_.data());
  // The averager's stream waits on the GPU engine's; the CPU engine has none (host gradients).
  CUstream_st* const stream = engine_->stream();
  const auto ready = [this, stream](std::size_t tensor) { sync_->markReady(tensor, stream); };
  // Sharded: forward waits for each layer's gather, started by the last step's update (time the
  // step spends waiting for communication, like synchronize()).
  double gatherWait = 0;
  const auto needed = [this, stream, &gatherWait](std::size_t tensor) {
    const auto waitStart = Clock::now();
    sync_->waitForParameter(tensor, stream);
    gatherWait += secondsSince(waitStart);
  };
  // Each rank's gradient is scaled by 1/rows (the global batch), so summing over the ranks gives
  // the mean over the whole batch whatever each rank's share.
  const BatchStats stats = engine_->trainBatch(x_.data(), y_.data(), share.count, 1.0f / static_cast<float>(rows),
                                               ready, sync_->sharded() ? needed : std::function<void(std::size_t)>());
  const auto waitStart = Clock::now();
  sync_->synchronize();
  const double wait = secondsSince(waitStart) + gatherWait;
  engine_->applySgd(config_.sgd, learningRateAt(config_.sgd, position_.step, totalSteps_),
                    [this, stream](std::size_t tensor) { sync_->markUpdated(tensor, stream); });
  const double seconds = secondsSince(start);
  const StepStats step{
      stats.lossSum, static_cast<double>(stats.correct), static_cast<double>(share.count), seconds, wait, 1};
  window_.add(step);
  epoch_.add(step);
  if (stepsThisRun_++ >= kWarmupSteps) timed_.add(step);
  trainSeconds_ += seconds;
}

void Trainer::afterStep(std::size_t epoch) {
  const std::size_t step = position_.step;
  if (config_.printEvery > 0 && step % config_.printEvery == 0) {
    const StepStats window = window_.reduce(comm_);
    say(formatProgress(epoch + 1, config_.epochs, step, window, comm_.size()));
    window_ = StepStats{};
  }
  if (config_.replicaCheckEvery > 0 && step % config_.replicaCheckEvery == 0) checkReplicasNow();
  if (!config_.checkpointPath.empty() && config_.checkpointEvery > 0 && step % config_.checkpointEvery == 0) save();
}

EpochRecord Trainer::finishEpoch(std::size_t epoch, bool evaluateNow, double seconds) {
  const StepStats stats = epoch_.reduce(comm_);
  EpochRecord record;
  record.epoch = epoch + 1;
  record.steps = static_cast<std::size_t>(stats.steps / comm_.size());
  record.trainLoss = stats.loss();
  record.trainAccuracy = stats.accuracy();
  record.samplesPerSecond = stats.samplesPerSecond(comm_.size());
  record.waitShare = stats.waitShare();
  record.seconds = seconds;
  if (evaluateNow) {
    record.test = evaluate();
    record.evaluated = true;
  }
  if (record.steps > 0) say(formatEpoch(record, config_.epochs));
  return record;
}

void Trainer::completeParameters() { sync_->gatherParameters(); }

Evaluation Trainer::evaluate() {
  completeParameters();
  const Share share = shareOf(data_.test.count, comm_.rank(), comm_.size());
  double sums[2] = {0, 0};  // loss, correct
  for (std::size_t done = 0; done < share.count;) {
    const std::size_t rows = std::min(engine_->maxRows(), share.count - done);
    gatherRange(data_.test, share.begin + done, rows, x_.data(), y_.data());
    const BatchStats stats = engine_->evaluate(x_.data(), y_.data(), rows);
    sums[0] += stats.lossSum;
    sums[1] += static_cast<double>(stats.correct);
    done += rows;
  }
  comm_.allreduce(sums, sums, 2, DataType::kFloat64, ReduceOp::kSum);
  const double samples = static_cast<double>(data_.test.count);
  return {sums[0] / samples, sums[1] / samples, static_cast<std::uint64_t>(sums[1]), data_.test.count};
}

void Trainer::checkReplicasNow() {
  completeParameters();
  const std::vector<float> current = parameters();
  checkReplicas(comm_, parameterChecksum(current.data(), current.size()), position_.step);
}

void Trainer::save() {
  if (savedStep_ == position_.step) return;  // e.g. the end of the run right after an epoch's save
  savedStep_ = position_.step;
  completeParameters();
  Checkpoint c{layout_.widths(), config_.seed, globalBatch_, position_, parameters(), momentum()};
  saveCheckpoint(comm_, config_.checkpointPath, c);
}

std::vector<float> Trainer::parameters() const {
  std::vector<float> values(layout_.parameterCount());
  engine_->getState(values.data(), nullptr);
  return values;
}

std::vector<float> Trainer::momentum() {
  std::vector<float> parameters(layout_.parameterCount()), owned(stateCount(engine_->ownership()));
  engine_->getState(parameters.data(), owned.data());
  return gatherMomentum(comm_, *sync_, layout_, owned);
}

std::size_t Trainer::optimizerStateBytes() const { return stateCount(engine_->ownership()) * sizeof(float); }

void Trainer::say(const std::string& line) const {
  if (progress_ && !config_.quiet && comm_.rank() == 0) *progress_ << line << std::endl;
}

}  // namespace ringsync::trainer
