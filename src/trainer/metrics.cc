#include "metrics.h"

#include <cstdarg>
#include <cstdio>

#include "json_writer.h"

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

std::string evaluationJson(const Evaluation& e) {
  return JsonObject().add("loss", e.loss).add("accuracy", e.accuracy).add("correct", e.correct)
      .add("samples", e.samples).str();
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
  std::string line = format("epoch %zu/%zu done: train loss %.4f acc %.4f", r.epoch, epochs, r.trainLoss, r.trainAccuracy);
  if (r.evaluated) line += format("  test loss %.4f acc %.4f", r.test.loss, r.test.accuracy);
  return line + format("  %.0f samples/s  comm wait %.1f%%  %.1f s", r.samplesPerSecond, 100.0 * r.waitShare, r.seconds);
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
  text += format("#   test accuracy %.4f (%llu/%llu)  test loss %.4f  train loss %.4f\n", r.finalTest.accuracy,
                 static_cast<unsigned long long>(r.finalTest.correct), static_cast<unsigned long long>(r.finalTest.samples),
                 r.finalTest.loss, r.finalTrainLoss);
  text += format("#   %.0f samples/s  comm wait %.1f%% of step time  train %.1f s  total %.1f s", r.samplesPerSecond,
                 100.0 * r.waitShare, r.trainSeconds, r.totalSeconds);
  return text;
}

std::string reportJson(const RunReport& r) {
  std::vector<std::string> epochs;
  for (const EpochRecord& e : r.epochRecords) {
    JsonObject record;
    record.add("epoch", std::uint64_t{e.epoch}).add("steps", std::uint64_t{e.steps}).add("train_loss", e.trainLoss)
        .add("train_accuracy", e.trainAccuracy).add("samples_per_second", e.samplesPerSecond)
        .add("comm_wait_share", e.waitShare).add("seconds", e.seconds);
    if (e.evaluated) record.addRaw("test", evaluationJson(e.test));
    epochs.push_back(record.str());
  }
  const TrainerConfig& c = r.config;
  JsonObject config;
  config.add("epochs", std::uint64_t{c.epochs}).add("global_batch", std::uint64_t{r.globalBatch})
      .add("per_rank_batch", std::uint64_t{c.perRankBatch}).add("max_steps", std::uint64_t{c.maxSteps})
      .add("lr", double{c.sgd.learningRate}).add("lr_schedule", lrScheduleName(c.sgd.schedule))
      .add("warmup_steps", std::uint64_t{c.sgd.warmupSteps}).add("momentum", double{c.sgd.momentum})
      .add("weight_decay", double{c.sgd.weightDecay}).add("seed", std::uint64_t{c.seed})
      .add("overlap", c.overlap).add("blas_threads", c.blasThreads);
  JsonObject root;
  root.add("tool", "ringsync-train").add("ranks", r.ranks).add("device", r.device).add("model", r.model)
      .add("parameters", std::uint64_t{r.parameters}).add("data", r.data)
      .add("train_samples", std::uint64_t{r.trainSamples}).add("test_samples", std::uint64_t{r.testSamples})
      .add("gradient_sync", r.sync).addRaw("config", config.str())
      .add("first_step", std::uint64_t{r.firstStep}).add("last_step", std::uint64_t{r.lastStep})
      .addRaw("epochs", jsonArray(epochs)).addRaw("final_test", evaluationJson(r.finalTest))
      .add("final_train_loss", r.finalTrainLoss).add("train_seconds", r.trainSeconds)
      .add("total_seconds", r.totalSeconds).add("samples_per_second", r.samplesPerSecond)
      .add("comm_wait_share", r.waitShare);
  return root.str() + "\n";
}

}  // namespace ringsync::trainer
