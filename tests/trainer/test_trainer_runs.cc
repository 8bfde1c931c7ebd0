// Whole training runs on synthetic data: the loss goes down, a checkpointed and resumed run
// continues bit-identically, resuming is refused when it could not continue the same run, the
// replica check names diverged ranks, and --device gpu fails cleanly on every rank without a GPU.
#include <catch2/catch.hpp>

#include <cstring>

#include "ringsync/ringsync.h"
#include "support/test_support.h"
#include "errors.h"
#include "replica_check.h"
#include "run_training.h"
#include "trainer.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

namespace {

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs `body`, returns the CollectiveFailure message it raised ("" when none was raised).
template <typename Body> std::string failureOf(Body&& body) {
  try {
    body();
  } catch (const CollectiveFailure& failure) {
    return failure.what();
  }
  return "";
}

}  // namespace

TEST_CASE("training: the loss decreases on a learnable synthetic set", "[trainer]") {
  Communicator comm(MPI_COMM_WORLD);
  TrainerConfig config = fixtures::smallConfig(32, 0);
  config.layers = {32, 24, 4};
  config.syntheticSamples = 640;
  config.syntheticTestSamples = 200;
  config.epochs = 4;
  config.sgd.learningRate = 0.02f;
  config.evaluateEachEpoch = true;
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, nullptr), nullptr);
  const Evaluation before = trainer.evaluate();
  const RunReport report = trainer.run();
  REQUIRE(report.epochRecords.size() == 4);
  bool decreasing = true;
  for (std::size_t e = 1; e < report.epochRecords.size(); ++e) {
    decreasing = decreasing && report.epochRecords[e].trainLoss < report.epochRecords[e - 1].trainLoss;
  }
  INFO("test loss " << before.loss << " -> " << report.finalTest.loss << ", accuracy " << before.accuracy << " -> "
                    << report.finalTest.accuracy << "; epoch train losses " << report.epochRecords[0].trainLoss
                    << " .. " << report.epochRecords[3].trainLoss);
  // 4 classes: chance is 0.25; the classes are well separated, so training must get far beyond it.
  REQUIRE(ringsync::test::allRanks(decreasing && report.finalTest.loss < 0.5 * before.loss &&
                                   report.finalTest.accuracy > 0.9 && report.finalTest.samples == 200));
}

TEST_CASE("checkpoint: a resumed run continues bit-identically", "[trainer][checkpoint]") {
  Communicator comm(MPI_COMM_WORLD);
  fixtures::ScratchDir dir("trainer-ckpt");
  // B=7 over 90 samples: 13 steps per epoch. Stop mid-epoch (step 9), resume past the epoch end.
  const TrainerConfig straight = fixtures::smallConfig(7, 20);
  TrainerConfig first = straight;
  first.maxSteps = 9;
  first.checkpointPath = dir.file("model.ckpt");
  first.checkpointEvery = 4;
  TrainerConfig second = first;
  second.maxSteps = 20;
  second.resume = true;

  const fixtures::RunOutcome reference = fixtures::trainOn(comm, straight);
  fixtures::trainOn(comm, first);
  const fixtures::RunOutcome resumed = fixtures::trainOn(comm, second);
  INFO("resumed run covered steps " << resumed.report.firstStep << ".." << resumed.report.lastStep);
  REQUIRE(ringsync::test::allRanks(resumed.report.firstStep == 9 && resumed.report.lastStep == 20 &&
                                   sameBits(resumed.parameters, reference.parameters) &&
                                   sameBits(resumed.momentum, reference.momentum)));
  // The rename happened: no temporary file is left behind.
  REQUIRE(ringsync::test::allRanks(fixtures::readBytes(first.checkpointPath + ".tmp").empty()));
}

TEST_CASE("checkpoint: resuming a different run is refused on every rank", "[trainer][checkpoint]") {
  Communicator comm(MPI_COMM_WORLD);
  fixtures::ScratchDir dir("trainer-ckpt");
  TrainerConfig config = fixtures::smallConfig(7, 3);
  config.checkpointPath = dir.file("model.ckpt");
  fixtures::trainOn(comm, config);
  config.resume = true;
  config.maxSteps = 6;

  TrainerConfig otherBatch = config;
  otherBatch.globalBatch = 8;
  const std::string batchError = failureOf([&] { fixtures::trainOn(comm, otherBatch); });
  TrainerConfig otherModel = config;
  otherModel.layers = {20, 10, 5};
  const std::string modelError = failureOf([&] { fixtures::trainOn(comm, otherModel); });
  TrainerConfig missing = config;
  missing.checkpointPath = dir.file("absent.ckpt");
  const std::string missingError = failureOf([&] { fixtures::trainOn(comm, missing); });
  if (comm.rank() == 0) {  // one flipped bit in the middle of the parameters
    std::vector<std::uint8_t> bytes = fixtures::readBytes(config.checkpointPath);
    bytes[bytes.size() / 2] ^= 0x10;
    fixtures::writeBytes(config.checkpointPath, bytes);
  }
  const std::string corruptError = failureOf([&] { fixtures::trainOn(comm, config); });

  INFO(batchError << "\n" << modelError << "\n" << missingError << "\n" << corruptError);
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  REQUIRE(ringsync::test::allRanks(has(batchError, "global batch 7, this run has 1 and 8") &&
                                   has(modelError, "holds model 20-16-12-5, this run has 20-10-5") &&
                                   has(missingError, "absent.ckpt: cannot open checkpoint") &&
                                   has(corruptError, "model.ckpt: checkpoint CRC mismatch")));
}

TEST_CASE("replica check: diverged ranks are named on every rank", "[trainer][replica]") {
  Communicator comm(MPI_COMM_WORLD);
  // Identical checksums pass.
  checkReplicas(comm, 42, 1);
  if (comm.size() == 1) return;
  // Odd ranks differ from rank 0.
  const std::uint64_t mine = comm.rank() % 2 == 1 ? 7 : 42;
  std::string message;
  try {
    checkReplicas(comm, mine, 17);
  } catch (const ReplicaMismatch& mismatch) {
    message = mismatch.what();
  }
  std::string expected = comm.size() >= 4 ? "ranks 1 (0x7), 3 (0x7) differ from rank 0's (0x2a)"
                                          : "rank 1 (0x7) differ from rank 0's (0x2a)";
  INFO("got: " << message);
  REQUIRE(ringsync::test::allRanks(message.find(expected) != std::string::npos &&
                                   message.find("after step 17") != std::string::npos));
}

TEST_CASE("device: --device gpu without a GPU engine fails on every rank; auto picks the cpu", "[trainer]") {
  Communicator comm(MPI_COMM_WORLD);
  TrainerConfig config = fixtures::smallConfig(7, 2);
  config.device = Device::kGpu;
  const std::string error = failureOf([&] { makeEngineOnEveryRank(comm, config, nullptr); });
  config.device = Device::kAuto;
  const std::string engine = makeEngineOnEveryRank(comm, config, nullptr)->describe();
  INFO(error << " / " << engine);
  REQUIRE(
      ringsync::test::allRanks(error.find("built without CUDA") != std::string::npos && engine.rfind("cpu", 0) == 0));
}
