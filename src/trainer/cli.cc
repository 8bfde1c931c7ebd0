#include "cli.h"

#include <cctype>
#include <sstream>

#include <CLI/CLI.hpp>

#include "ringsync/errors.h"

namespace ringsync::trainer {

std::vector<std::size_t> parseLayers(const std::string& text) {
  std::vector<std::size_t> widths;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, text.find(',') != std::string::npos ? ',' : '-')) {
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
      value = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || value == 0) {
      throw InvalidArgument("--layers: '" + item + "' in '" + text + "' is not a positive width");
    }
    widths.push_back(static_cast<std::size_t>(value));
  }
  if (widths.size() < 2) throw InvalidArgument("--layers: '" + text + "' needs at least an input and an output width");
  return widths;
}

namespace {

std::string lowercase(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

void addDataAndModel(CLI::App& app, TrainerConfig& c) {
  app.add_option("--data", c.dataDir, "Folder with Fashion-MNIST's {train,t10k}-*-ubyte.gz")->capture_default_str();
  app.add_option("--synthetic", c.syntheticSamples, "Train on N synthetic samples instead (tests, benches)");
  app.add_option("--synthetic-test", c.syntheticTestSamples, "Synthetic test samples (default N/5)");
  app.add_option_function<std::string>(
         "--layers",
         [&c](const std::string& text) {
           try {
             c.layers = parseLayers(text);
           } catch (const Error& error) {
             throw CLI::ValidationError(error.what());
           }
         },
         "Layer widths: inputs,hidden...,classes")
      ->default_str("784,256,128,10");
  app.add_option("--seed", c.seed, "Seed of the initial weights, the sample order and synthetic data")
      ->capture_default_str();
}

void addSchedule(CLI::App& app, TrainerConfig& c) {
  app.add_option("--epochs", c.epochs, "Passes over the training set")->capture_default_str();
  app.add_option("--batch", c.globalBatch, "Global batch: samples per step over all ranks")->capture_default_str();
  app.add_option("--batch-per-rank", c.perRankBatch, "Samples per step per rank (global batch = this x ranks)");
  app.add_option("--max-steps", c.maxSteps, "Stop after this many steps in total (0: no limit)");
  app.add_option("--lr", c.sgd.learningRate, "Learning rate")->capture_default_str();
  app.add_option_function<std::string>(
         "--lr-schedule",
         [&c](const std::string& name) {
           c.sgd.schedule = lowercase(name) == "constant" ? LrSchedule::kConstant : LrSchedule::kCosine;
         },
         "constant or cosine (decay to 0 at the last epoch)")
      ->check(CLI::IsMember({"constant", "cosine"}, CLI::ignore_case))
      ->default_str(lrScheduleName(c.sgd.schedule));
  app.add_option("--warmup-steps", c.sgd.warmupSteps, "Linear learning-rate warm-up steps")->capture_default_str();
  app.add_option("--momentum", c.sgd.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--weight-decay", c.sgd.weightDecay, "L2 weight decay")->capture_default_str();
}

void addRuntime(CLI::App& app, TrainerConfig& c) {
  app.add_option_function<std::string>(
         "--device",
         [&c](const std::string& name) {
           const std::string n = lowercase(name);
           c.device = n == "cpu" ? Device::kCpu : n == "gpu" ? Device::kGpu : Device::kAuto;
         },
         "cpu (OpenBLAS), gpu (cuBLAS) or auto (gpu when one is usable)")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}, CLI::ignore_case))
      ->default_str(deviceName(c.device));
  app.add_option("--threads", c.blasThreads, "OpenBLAS threads per rank")->capture_default_str();
  app.add_flag_callback(
      "--no-overlap", [&c] { c.overlap = false; }, "All-reduce the gradients after backward instead of during it");
  app.add_flag_callback(
      "--overlap", [&c] { c.overlap = true; },
      "Start gradient buckets during backward even where a rank has no CPU to spare for it (the default "
      "overlaps on a GPU, across nodes, or with two CPUs per rank)");
  app.add_flag("--fp16-wire", c.fp16Wire,
               "Send the gradients as float16 (half the bytes; sums kept in float32 between ring steps). "
               "CPU engine only: device gradients go as float32");
  app.add_flag("--shard", c.shard,
               "Sharded data parallelism (ZeRO-1/2): reduce-scatter the gradients, each rank updates and keeps "
               "momentum for its shard only, all-gather the parameters (same updates as without)");
  app.add_option("--print-every", c.printEvery, "Steps between progress lines (0: none)")->capture_default_str();
  app.add_option("--replica-check-every", c.replicaCheckEvery, "Steps between replica checksum checks (0: at the end)")
      ->capture_default_str();
  app.add_flag_callback(
      "--no-epoch-eval", [&c] { c.evaluateEachEpoch = false; }, "Evaluate only at the end, not after every epoch");
  app.add_option("--json", c.jsonPath, "Write the metrics to this JSON file");
  app.add_option("--timeline", c.timelinePath,
                 "Write a Chrome trace of every collective and gradient bucket here (RINGSYNC_TIMELINE)");
  app.add_option("--checkpoint", c.checkpointPath, "Save checkpoints here (atomically, from rank 0)");
  app.add_option("--checkpoint-every", c.checkpointEvery, "Steps between checkpoints (0: after every epoch)");
  app.add_flag("--resume", c.resume, "Continue from --checkpoint FILE");
  app.add_flag("--quiet", c.quiet, "No progress lines or summary");
}

}  // namespace

std::optional<int> parseCommandLine(int argc, const char* const* argv, TrainerConfig& config, bool print,
                                    std::ostream& out, std::ostream& err) {
  CLI::App app(
      "ringsync-train: synchronous data-parallel training of an MLP on Fashion-MNIST.\n"
      "Launch with: mpirun -np N ringsync-train [options]",
      "ringsync-train");
  app.option_defaults()->always_capture_default(false);
  addDataAndModel(app, config);
  addSchedule(app, config);
  addRuntime(app, config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::ostringstream quietOut, quietErr;
    return print ? app.exit(error, out, err) : app.exit(error, quietOut, quietErr);
  }
  return std::nullopt;
}

}  // namespace ringsync::trainer
