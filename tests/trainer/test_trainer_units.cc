// The trainer's pieces on one rank, each against a closed form or a direct computation: batch
// shares, shuffled orders, learning-rate schedule, model layout and initialisation, softmax
// cross-entropy, SGD, the CPU engine's gradients (against finite differences), the --device
// choice, checkpoints, JSON, IDX parsing and the command line.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ringsync/errors.h"
#include "checkpoint.h"
#include "cli.h"
#include "compute.h"
#include "errors.h"
#include "idx_reader.h"
#include "metrics.h"
#include "model.h"
#include "optimizer.h"
#include "optimizer_state.h"
#include "random.h"
#include "replica_check.h"
#include "schedule.h"
#include "softmax_loss.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

TEST_CASE("schedule: shares split a batch contiguously, differing by at most one", "[trainer][unit]") {
  for (int ranks = 1; ranks <= 5; ++ranks) {
    for (std::size_t rows = 0; rows <= 13; ++rows) {
      std::size_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const Share share = shareOf(rows, r, ranks);
        INFO("rows=" << rows << " ranks=" << ranks << " rank=" << r);
        REQUIRE(share.begin == next);
        REQUIRE(share.count == rows / ranks + (static_cast<std::size_t>(r) < rows % ranks ? 1 : 0));
        next += share.count;
      }
      REQUIRE(next == rows);
    }
  }
  CHECK(batchesPerEpoch(90, 7) == 13);
  CHECK(batchRows(90, 7, 12) == 6);
  CHECK(batchRows(90, 7, 13) == 0);
  CHECK(batchesPerEpoch(60000, 128) == 469);
}

TEST_CASE("schedule: each epoch's order is a permutation fixed by seed and epoch", "[trainer][unit]") {
  const std::vector<std::uint32_t> a = epochOrder(1000, 5, 3);
  std::vector<std::uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint32_t> identity(1000);
  std::iota(identity.begin(), identity.end(), 0u);
  CHECK(sorted == identity);
  CHECK(a == epochOrder(1000, 5, 3));
  CHECK(a != epochOrder(1000, 5, 4));
  CHECK(a != epochOrder(1000, 6, 3));
  CHECK(a != identity);
  CHECK(epochOrder(0, 1, 0).empty());
}

TEST_CASE("schedule: learning rate warm-up, constant and cosine", "[trainer][unit]") {
  SgdSettings sgd;
  sgd.learningRate = 0.4f;
  sgd.schedule = LrSchedule::kConstant;
  CHECK(learningRateAt(sgd, 0, 100) == 0.4f);
  CHECK(learningRateAt(sgd, 99, 100) == 0.4f);
  sgd.schedule = LrSchedule::kCosine;
  CHECK(learningRateAt(sgd, 0, 100) == Approx(0.4));
  CHECK(learningRateAt(sgd, 50, 100) == Approx(0.2));
  CHECK(learningRateAt(sgd, 100, 100) == Approx(0.0).margin(1e-7));
  sgd.warmupSteps = 4;
  CHECK(learningRateAt(sgd, 0, 104) == Approx(0.1));
  CHECK(learningRateAt(sgd, 3, 104) == Approx(0.4));
  CHECK(learningRateAt(sgd, 54, 104) == Approx(0.2));
}

TEST_CASE("model: layout of 784-256-128-10 and its He initialisation", "[trainer][unit]") {
  const ModelLayout layout({784, 256, 128, 10});
  CHECK(layout.describe() == "784-256-128-10");
  CHECK(layout.parameterCount() == 784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10);
  CHECK(layout.tensorCount() == 6);
  CHECK(layout.weights(1).offset == 784 * 256 + 256);
  CHECK(layout.bias(2).offset == layout.parameterCount() - 10);
  CHECK(layout.widestLayer() == 784);
  const std::vector<float> p = initialParameters(layout, 9);
  CHECK(p == initialParameters(layout, 9));
  CHECK(p != initialParameters(layout, 10));
  double sumSquares = 0;
  for (std::size_t i = 0; i < layout.weights(0).count; ++i) sumSquares += double{p[i]} * p[i];
  // 200704 draws: the sample deviation is within 1% of sqrt(2/784) with overwhelming probability.
  CHECK(std::sqrt(sumSquares / layout.weights(0).count) == Approx(std::sqrt(2.0 / 784)).epsilon(0.01));
  const TensorSlice b = layout.bias(1);
  CHECK(std::all_of(p.begin() + b.offset, p.begin() + b.offset + b.count, [](float v) { return v == 0.0f; }));
  CHECK_THROWS_AS(ModelLayout({784}), ConfigError);
  CHECK(describeWidths({3, 2}) == "3-2");
}

TEST_CASE("softmax cross-entropy: equal logits give log(C) and (1/C - onehot)", "[trainer][unit]") {
  const std::vector<float> logits(3 * 4, 0.5f);
  const std::vector<std::int32_t> labels = {0, 3, 1};
  std::vector<float> d(12);
  const BatchStats stats = softmaxCrossEntropy(logits.data(), labels.data(), 3, 4, 0.5f, d.data());
  CHECK(stats.lossSum == Approx(3 * std::log(4.0)));
  CHECK(stats.correct == 1);  // ties go to the first class: row 0 only
  for (std::size_t r = 0; r < 3; ++r) {
    for (std::size_t c = 0; c < 4; ++c) {
      CHECK(d[r * 4 + c] == Approx(0.5 * (0.25 - (static_cast<std::int32_t>(c) == labels[r] ? 1 : 0))));
    }
  }
}

TEST_CASE("sgd: momentum and weight decay, two steps in closed form", "[trainer][unit]") {
  SgdSettings sgd;
  sgd.momentum = 0.5f;
  sgd.weightDecay = 0.25f;
  float w = 2.0f, v = 0.0f;
  const float g = 1.0f;
  sgdMomentumStep(&w, &v, &g, 1, sgd, 0.1f);  // v = 1 + 0.5 = 1.5; w = 2 - 0.15 = 1.85
  CHECK(v == Approx(1.5));
  CHECK(w == Approx(1.85));
  sgdMomentumStep(&w, &v, &g, 1, sgd, 0.1f);  // v = 0.75 + 1 + 0.4625 = 2.2125; w = 1.85 - 0.22125
  CHECK(v == Approx(2.2125));
  CHECK(w == Approx(1.62875));
}

namespace {
// Mean loss of the CPU engine with `parameters` over the batch.
double meanLoss(ComputeEngine& engine, const std::vector<float>& parameters, const std::vector<float>& x,
                const std::vector<std::int32_t>& y) {
  const std::vector<float> zero(parameters.size(), 0.0f);
  engine.setState(parameters.data(), zero.data());
  return engine.evaluate(x.data(), y.data(), y.size()).lossSum / static_cast<double>(y.size());
}
}  // namespace

TEST_CASE("cpu engine: gradients match finite differences; ready order is backward's", "[trainer][unit]") {
  const ModelLayout layout({6, 5, 4, 3});
  auto engine = makeCpuEngine(layout, 8, 1);
  std::vector<float> parameters = initialParameters(layout, 3);
  for (std::size_t i = 0; i < parameters.size(); ++i) parameters[i] += 0.05f * static_cast<float>(i % 5);  // biases too
  std::vector<float> x(5 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7 * static_cast<double>(i));
  const std::vector<std::int32_t> y = {0, 2, 1, 2, 0};
  const std::vector<float> zero(parameters.size(), 0.0f);
  engine->setState(parameters.data(), zero.data());
  std::vector<std::size_t> order;
  std::vector<std::size_t> needed;
  engine->trainBatch(
      x.data(), y.data(), 5, 1.0f / 5, [&](std::size_t t) { order.push_back(t); },
      [&](std::size_t t) { needed.push_back(t); });
  CHECK(needed == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});  // forward asks for each tensor before using it
  CHECK(order == std::vector<std::size_t>{5, 4, 3, 2, 1, 0});
  const std::vector<float> gradient(engine->gradients(), engine->gradients() + parameters.size());
  double worst = 0;
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const float h = 1e-2f;
    std::vector<float> plus = parameters, minus = parameters;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (meanLoss(*engine, plus, x, y) - meanLoss(*engine, minus, x, y)) / (2.0 * h);
    worst = std::max(worst, std::abs(numeric - gradient[i]));
  }
  INFO("largest |analytic - numeric| gradient difference: " << worst);
  CHECK(worst < 2e-3);
  // A rank without a share of the batch contributes zeros and still marks every tensor.
  order.clear();
  engine->trainBatch(x.data(), y.data(), 0, 1.0f, [&](std::size_t t) { order.push_back(t); }, {});
  CHECK(order.size() == 6);
  CHECK(std::all_of(engine->gradients(), engine->gradients() + parameters.size(), [](float g) { return g == 0.0f; }));
}

TEST_CASE("cpu engine: an ownership updates its slices only, with momentum for them alone", "[trainer][unit][shard]") {
  const ModelLayout layout({6, 5, 4, 3});  // tensors of 30, 5, 20, 4, 12, 3
  const Ownership owned = {{3, 10}, {0, 0}, {5, 20}, {2, 4}, {0, 12}, {1, 3}};
  auto whole = makeCpuEngine(layout, 8, 1), shard = makeCpuEngine(layout, 8, 1);
  shard->setOwnership(owned);
  CHECK(stateCount(shard->ownership()) == 7 + 0 + 15 + 2 + 12 + 2);
  CHECK(stateCount(whole->ownership()) == layout.parameterCount());
  const std::vector<float> parameters = initialParameters(layout, 5);
  std::vector<float> momentum(layout.parameterCount());
  for (std::size_t i = 0; i < momentum.size(); ++i) momentum[i] = 0.01f * static_cast<float>(i % 13);
  whole->setState(parameters.data(), momentum.data());
  shard->setState(parameters.data(), ownedMomentum(owned, layout, momentum).data());
  std::vector<float> x(5 * 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.3 * static_cast<double>(i));
  const std::vector<std::int32_t> y = {0, 2, 1, 2, 0};
  SgdSettings sgd;
  sgd.weightDecay = 0.01f;
  std::vector<std::size_t> updated;
  for (ComputeEngine* engine : {whole.get(), shard.get()}) {
    engine->trainBatch(x.data(), y.data(), 5, 1.0f / 5, [](std::size_t) {}, {});
    updated.clear();
    engine->applySgd(sgd, 0.1f, [&](std::size_t t) { updated.push_back(t); });
  }
  CHECK(updated == std::vector<std::size_t>{0, 1, 2, 3, 4, 5});  // every tensor, also one with nothing owned
  std::vector<float> wholeParameters(layout.parameterCount()), wholeMomentum(layout.parameterCount());
  std::vector<float> shardParameters(layout.parameterCount()), shardMomentum(stateCount(owned));
  whole->getState(wholeParameters.data(), wholeMomentum.data());
  shard->getState(shardParameters.data(), shardMomentum.data());
  // The owned slices as the whole engine updated them (the same arithmetic), the rest untouched.
  bool same = shardMomentum == ownedMomentum(owned, layout, wholeMomentum);
  for (std::size_t t = 0; t < layout.tensorCount(); ++t)
    for (std::size_t i = 0; i < layout.tensor(t).count; ++i) {
      const std::size_t at = layout.tensor(t).offset + i;
      const bool mine = i >= owned[t].begin && i < owned[t].end;
      same = same && shardParameters[at] == (mine ? wholeParameters[at] : parameters[at]);
    }
  CHECK(same);
  CHECK(wholeParameters != parameters);
}

TEST_CASE("compute engine: --device follows the communicator's CUDA device", "[trainer][unit]") {
  const ModelLayout layout({4, 3});
  int asked = -2;
  GpuHooks hooks;  // stands in for the GPU engine: records the device, then makes a CPU engine
  hooks.makeEngine = [&](const ModelLayout& l, std::size_t maxRows, int device) {
    asked = device;
    return makeCpuEngine(l, maxRows, 1);
  };
  SECTION("a device: gpu and auto build the engine on exactly that one") {
    CHECK(makeComputeEngine(Device::kGpu, layout, 8, 1, 3, &hooks) != nullptr);
    CHECK(asked == 3);
    asked = -2;
    CHECK(makeComputeEngine(Device::kAuto, layout, 8, 1, 0, &hooks) != nullptr);
    CHECK(asked == 0);
  }
  SECTION("no device (-1): auto falls back to the cpu, gpu names the reason") {
    CHECK(makeComputeEngine(Device::kAuto, layout, 8, 1, -1, &hooks)->describe().rfind("cpu", 0) == 0);
    CHECK_THROWS_WITH(makeComputeEngine(Device::kGpu, layout, 8, 1, -1, &hooks),
                      Catch::Contains("--device gpu: no usable CUDA device for this rank"));
    CHECK(asked == -2);
  }
  SECTION("built without CUDA (no hooks)") {
    CHECK_THROWS_WITH(makeComputeEngine(Device::kGpu, layout, 8, 1, 0, nullptr), Catch::Contains("built without CUDA"));
  }
  SECTION("cpu never asks for a GPU") {
    CHECK(makeComputeEngine(Device::kCpu, layout, 8, 1, 0, &hooks) != nullptr);
    CHECK(asked == -2);
  }
}

TEST_CASE("checkpoint: round trip, atomic file write, and corruption detected", "[trainer][unit][checkpoint]") {
  Checkpoint c{{4, 3, 2}, 77, 13, {2, 5, 31}, {1.5f, -2.0f, 3.25f}, {0.5f, 0.0f, -1.0f}};
  const std::vector<std::uint8_t> bytes = serializeCheckpoint(c);
  const Checkpoint back = parseCheckpoint(bytes, "mem");
  CHECK(back.widths == c.widths);
  CHECK(back.seed == 77);
  CHECK(back.globalBatch == 13);
  CHECK((back.position.epoch == 2 && back.position.batch == 5 && back.position.step == 31));
  CHECK(back.parameters == c.parameters);
  CHECK(back.momentum == c.momentum);

  std::vector<std::uint8_t> flipped = bytes;
  flipped[40] ^= 1;
  CHECK_THROWS_WITH(parseCheckpoint(flipped, "f.ckpt"), Catch::Contains("f.ckpt: checkpoint CRC mismatch"));
  CHECK_THROWS_WITH(parseCheckpoint({bytes.begin(), bytes.begin() + 6}, "t.ckpt"), Catch::Contains("t.ckpt: not a"));
  std::vector<std::uint8_t> badMagic = bytes;
  badMagic[0] = 'X';
  CHECK_THROWS_WITH(parseCheckpoint(badMagic, "m.ckpt"), Catch::Contains("bad magic"));

  fixtures::ScratchDir dir("trainer-unit");
  const std::string path = dir.file("c.ckpt");
  writeCheckpointFile(path, c);
  CHECK(readCheckpointFile(path).parameters == c.parameters);
  CHECK(fixtures::readBytes(path + ".tmp").empty());
  CHECK_THROWS_WITH(writeCheckpointFile(dir.file("no/such/dir.ckpt"), c),
                    Catch::Contains("no/such/dir.ckpt.tmp: No such file or directory"));
}

TEST_CASE("replica checksum: any changed bit changes it", "[trainer][unit]") {
  std::vector<float> p(100, 1.0f);
  const std::uint64_t a = parameterChecksum(p.data(), p.size());
  p[57] = std::nextafter(1.0f, 2.0f);
  CHECK(parameterChecksum(p.data(), p.size()) != a);
}

TEST_CASE("json report: every field, strings escaped, non-finite numbers as null", "[trainer][unit]") {
  RunReport report;
  report.ranks = 3;
  report.model = "mlp \"784-128\"\n";
  report.data = "dir\x01\t\\caf\xc3\xa9/latin\xe9";  // a control byte, UTF-8, then a byte that is not UTF-8
  report.finalTrainLoss = NAN;
  report.totalSeconds = INFINITY;
  report.samplesPerSecond = 0.1;
  report.finalTest = {0.5, 0.25, 2, 8};
  EpochRecord epoch;
  epoch.epoch = 1;
  epoch.evaluated = true;
  epoch.test = {1.5, 0.75, 6, 8};
  report.epochRecords = {epoch, EpochRecord{}};
  const nlohmann::json parsed = nlohmann::json::parse(reportJson(report));
  CHECK(parsed.at("tool") == "ringsync-train");
  CHECK(parsed.at("ranks") == 3);
  CHECK(parsed.at("model") == "mlp \"784-128\"\n");
  CHECK(parsed.at("data") == "dir\x01\t\\caf\xc3\xa9/latin\xef\xbf\xbd");  // the stray byte as U+FFFD
  CHECK(parsed.at("final_train_loss").is_null());
  CHECK(parsed.at("total_seconds").is_null());
  CHECK(parsed.at("samples_per_second").get<double>() == 0.1);
  CHECK(parsed.at("final_test").at("correct") == 2);
  REQUIRE(parsed.at("epochs").size() == 2);
  CHECK(parsed.at("epochs").at(0).at("test").at("accuracy").get<double>() == 0.75);
  CHECK_FALSE(parsed.at("epochs").at(1).contains("test"));
  CHECK(parsed.at("config").contains("lr_schedule"));
  CHECK(parsed.at("config").at("shard") == false);
  for (const char* key : {"step_seconds", "sharded", "bytes_sent_per_rank_per_step", "optimizer_state_bytes_per_rank",
                          "replicated_optimizer_state_bytes"})
    CHECK(parsed.contains(key));
}

TEST_CASE("idx: a plain and a gzip file read back exactly", "[trainer][unit][data]") {
  fixtures::ScratchDir dir("trainer-unit");
  std::vector<std::uint8_t> data(2 * 3 * 5);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::uint8_t>(i * 9);
  for (bool gzip : {true, false}) {
    const std::string path = dir.file(gzip ? "a.gz" : "a.idx");
    fixtures::writeIdx(path, {2, 3, 5}, data, gzip);
    const IdxArray array = readIdxFile(path, 3);
    CHECK(array.dims == std::vector<std::size_t>{2, 3, 5});
    CHECK(array.data == data);
    CHECK_THROWS_WITH(readIdxFile(path, 1), Catch::Contains("has 3 dimensions, expected 1"));
  }
}

TEST_CASE("cli: options reach the config; bad values are refused", "[trainer][unit][cli]") {
  TrainerConfig config;
  std::ostringstream out, err;
  const char* argv[] = {"ringsync-train",
                        "--layers",
                        "10-8-3",
                        "--batch",
                        "7",
                        "--device",
                        "CPU",
                        "--lr",
                        "0.2",
                        "--lr-schedule",
                        "constant",
                        "--no-overlap",
                        "--resume",
                        "--checkpoint",
                        "x.ckpt",
                        "--epochs",
                        "3"};
  CHECK_FALSE(parseCommandLine(17, argv, config, true, out, err).has_value());
  CHECK(config.layers == std::vector<std::size_t>{10, 8, 3});
  CHECK(config.globalBatch == 7);
  CHECK(config.device == Device::kCpu);
  CHECK(config.sgd.learningRate == 0.2f);
  CHECK(config.sgd.schedule == LrSchedule::kConstant);
  CHECK(config.overlap == std::optional<bool>(false));
  CHECK_FALSE(config.shard);
  CHECK((config.resume && config.checkpointPath == "x.ckpt" && config.epochs == 3));
  CHECK(parseLayers("784,256,128,10") == std::vector<std::size_t>{784, 256, 128, 10});
  CHECK_THROWS_WITH(parseLayers("784,0,10"), Catch::Contains("'0'"));
  CHECK_THROWS_WITH(parseLayers("784,x"), Catch::Contains("'x'"));

  TrainerConfig sharded;
  const char* shard[] = {"ringsync-train", "--shard"};
  CHECK_FALSE(parseCommandLine(2, shard, sharded, true, out, err).has_value());
  CHECK(sharded.shard);

  TrainerConfig other;
  const char* badDevice[] = {"ringsync-train", "--device", "tpu"};
  CHECK(parseCommandLine(3, badDevice, other, true, out, err).value_or(0) != 0);
  CHECK_THAT(err.str(), Catch::Contains("--device"));
  const char* help[] = {"ringsync-train", "--help"};
  CHECK(parseCommandLine(2, help, other, true, out, err).value_or(1) == 0);
  CHECK_THAT(out.str(), Catch::Contains("--batch-per-rank"));

  TrainerConfig invalid;
  invalid.resume = true;
  CHECK_THROWS_WITH(invalid.validate(), Catch::Contains("--resume needs --checkpoint"));
}
