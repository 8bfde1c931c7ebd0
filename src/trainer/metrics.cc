#include "metrics.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

namespace ringsync::trainer {

namespace {
std::string format(const char* pattern, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* pattern, ...) {
  char buffer[512];
  va_list args;
  va_start(args, pattern);
  std::vsnprintf(buffer, sizeof(buffer), pattern, args);
  va_end(args);
  return buffer;
}

nlohmann::ordered_json evaluationJson(const Evaluation& e) {
  return {{"loss", e.loss}, {"accuracy", e.accuracy}, {"correct", e.correct}, {"samples", e.samples}};
}
}  // namespace

void StepStats::add(const StepStats& o) {
  lossSum += o.lossSum;
  correct += o.correct;
  samples += o.samples;
  stepSeconds += o.stepSeconds;
  waitSeconds += o.waitSeconds;
  steps += o.steps;
}

StepStats StepStats::reduce(Communicator& comm) const {
  double values[6] = {lossSum, correct, samples, stepSeconds, waitSeconds, steps};
  comm.allreduce(values, values, 6, DataType::kFloat64, ReduceOp::kSum);
  return {values[0], values[1], values[2], values[3], values[4], values[5]};
}

std::string formatProgress(std::size_t epoch, std::size_t epochs, std::size_t step, const StepStats& w, int ranks) {
  return format("epoch %zu/%zu  step %zu  loss %.4f  acc %.4f  %.0f samples/s  comm wait %.1f%%", epoch, epochs, step,
                w.loss(), w.accuracy(), w.samplesPerSecond(ranks), 100.0 * w.waitShare());
}

std::string formatEpoch(const EpochRecord& r, std::size_t epochs) {
  std::string line = format("epoch %zu/%zu done: train loss %.4f acc %.4f", r.epoch, epochs, r.trainLoss,
                            r.trainAccuracy);
  if (r.evaluated) line += format("  test loss %.4f acc %.4f", r.test.loss, r.test.accuracy);
  return line +
         format("  %.0f samples/s  comm wait %.1f%%  %.1f s", r.samplesPerSecond, 100.0 * r.waitShare, r.seconds);
}

std::string formatSummary(const RunReport& r) {
  std::string text = "# ringsync-train summary\n";
  text += format("#   ranks %d  device %s  model %s (%zu parameters)\n", r.ranks, r.device.c_str(), r.model.c_str(),
                 r.parameters);
  text += format("#   data %s: %zu train, %zu test\n", r.data.c_str(), r.trainSamples, r.testSamples);
  text += format("#   global batch %zu  steps %zu..%zu  lr %g (%s)  momentum %g  weight decay %g\n", r.globalBatch,
                 r.firstStep, r.lastStep, r.config.sgd.learningRate, lrScheduleName(r.config.sgd.schedule),
                 r.config.sgd.momentum, r.config.sgd.weightDecay);
  text += format("#   gradients: %s\n", r.sync.c_str());
  text += format(
      "#   per rank: optimizer state %zu bytes (%.3g of a replica's %zu), %zu bytes sent per step (ring "
      "count), step %.3f ms\n",
      r.optimizerStateBytes,
      r.replicatedStateBytes > 0 ? static_cast<double>(r.optimizerStateBytes) / r.replicatedStateBytes : 0.0,
      r.replicatedStateBytes, r.wireBytesPerStep, r.stepSeconds * 1e3);
  text += format("#   test accuracy %.4f (%llu/%llu)  test loss %.4f  train loss %.4f\n", r.finalTest.accuracy,
                 static_cast<unsigned long long>(r.finalTest.correct),
                 static_cast<unsigned long long>(r.finalTest.samples), r.finalTest.loss, r.finalTrainLoss);
  text += format("#   %.0f samples/s  comm wait %.1f%% of step time  train %.1f s  total %.1f s", r.samplesPerSecond,
                 100.0 * r.waitShare, r.trainSeconds, r.totalSeconds);
  return text;
}

// Keys in the order written; non-finite numbers (a diverged loss) as null (nlohmann's dump()).
// The data path and device name come from outside: bytes that are not UTF-8 are written as U+FFFD
// rather than failing the run at its end (dump() throws on them by default).
std::string reportJson(const RunReport& r) {
  nlohmann::ordered_json epochs = nlohmann::ordered_json::array();
  for (const EpochRecord& e : r.epochRecords) {
    nlohmann::ordered_json record = {{"epoch", e.epoch},
                                     {"steps", e.steps},
                                     {"train_loss", e.trainLoss},
                                     {"train_accuracy", e.trainAccuracy},
                                     {"samples_per_second", e.samplesPerSecond},
                                     {"comm_wait_share", e.waitShare},
                                     {"seconds", e.seconds}};
    if (e.evaluated) record["test"] = evaluationJson(e.test);
    epochs.push_back(std::move(record));
  }
  const TrainerConfig& c = r.config;
  const nlohmann::ordered_json config = {{"epochs", c.epochs},
                                         {"global_batch", r.globalBatch},
                                         {"per_rank_batch", c.perRankBatch},
                                         {"max_steps", c.maxSteps},
                                         {"lr", double{c.sgd.learningRate}},
                                         {"lr_schedule", lrScheduleName(c.sgd.schedule)},
                                         {"warmup_steps", c.sgd.warmupSteps},
                                         {"momentum", double{c.sgd.momentum}},
                                         {"weight_decay", double{c.sgd.weightDecay}},
                                         {"seed", c.seed},
                                         {"overlap", c.overlap ? nlohmann::ordered_json(*c.overlap)
                                                               : nlohmann::ordered_json("auto")},
                                         {"fp16_wire", c.fp16Wire},
                                         {"shard", c.shard},
                                         {"blas_threads", c.blasThreads}};
  const nlohmann::ordered_json root = {{"tool", "ringsync-train"},
                                       {"ranks", r.ranks},
                                       {"device", r.device},
                                       {"model", r.model},
                                       {"parameters", r.parameters},
                                       {"data", r.data},
                                       {"train_samples", r.trainSamples},
                                       {"test_samples", r.testSamples},
                                       {"gradient_sync", r.sync},
                                       {"config", config},
                                       {"first_step", r.firstStep},
                                       {"last_step", r.lastStep},
                                       {"epochs", std::move(epochs)},
                                       {"final_test", evaluationJson(r.finalTest)},
                                       {"final_train_loss", r.finalTrainLoss},
                                       {"train_seconds", r.trainSeconds},
                                       {"total_seconds", r.totalSeconds},
                                       {"samples_per_second", r.samplesPerSecond},
                                       {"comm_wait_share", r.waitShare},
                                       {"step_seconds", r.stepSeconds},
                                       {"sharded", r.sharded},
                                       {"bytes_sent_per_rank_per_step", r.wireBytesPerStep},
                                       {"optimizer_state_bytes_per_rank", r.optimizerStateBytes},
                                       {"replicated_optimizer_state_bytes", r.replicatedStateBytes}};
  return root.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace ringsync::trainer
