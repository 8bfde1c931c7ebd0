// ringsync-train --shard (ZeRO-1/2) at 1-4 ranks: after one epoch the sharded run's parameters
// equal the replicated run's within 1e-6 relative (the same model, data order and updates; only
// the order of the sums over the ranks may differ: for these small buckets the core's one-round
// all-reduce sums in rank order, its reduce-scatter round starts from the owner's own term; at 2
// ranks they agree exactly) and are bit-identical across ranks, for a model
// with layers smaller than the rank count and tensor and bucket sizes not divisible by it, in one
// bucket or several, with and without overlap; each rank keeps momentum for its shard only (the
// ranks' states add up to one replica's); a sharded checkpoint (momentum gathered into the full
// layout) resumes bit-identically, and in the other mode too.
#include <catch2/catch.hpp>

#include <cstring>

#include "ringsync/ringsync.h"
#include "support/test_support.h"
#include "model.h"
#include "run_training.h"
#include "trainer.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

namespace {

constexpr double kTolerance = 1e-6;

// 20-13-3-2: tensors of 260, 13, 39, 3, 6 and 2 elements (two smaller than 4 ranks, 3 and 2), 323
// in all (prime to 2, 3 and 4). B = 7 over 90 samples: 12 full batches and one of 6.
TrainerConfig oneEpoch(bool shard) {
  TrainerConfig config = fixtures::smallConfig(7, 0);
  config.layers = {20, 13, 3, 2};
  config.epochs = 1;
  config.shard = shard;
  return config;
}

// The averager's buckets come from the communicator's options: 256-byte buckets split the model
// into several (the 260-element weight alone, the rest in small ones); the defaults keep one.
Options bucketOptions(bool small) {
  Options options = Options::fromEnvironment();
  if (small) {
    options.bucketBytes = 256;
    options.firstBucketBytes = 64;
  }
  return options;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("shard: one epoch sharded gives the replicated run's parameters, identical on every rank",
          "[trainer][shard]") {
  for (bool smallBuckets : {false, true})
    for (bool overlap : {true, false}) {
      Communicator comm(MPI_COMM_WORLD, bucketOptions(smallBuckets));
      TrainerConfig replicatedConfig = oneEpoch(false), shardedConfig = oneEpoch(true);
      replicatedConfig.overlap = shardedConfig.overlap = overlap;
      const fixtures::RunOutcome replicated = fixtures::trainOn(comm, replicatedConfig);
      const fixtures::RunOutcome sharded = fixtures::trainOn(comm, shardedConfig);
      const std::vector<float> initial = initialParameters(ModelLayout(shardedConfig.layers), shardedConfig.seed);

      const double difference = fixtures::relativeDifference(sharded.parameters, replicated.parameters);
      const double momentumDifference = fixtures::relativeDifference(sharded.momentum, replicated.momentum);
      const double moved = fixtures::relativeDifference(replicated.parameters, initial);
      const bool identical = test::identicalOnAllRanks(sharded.parameters.data(),
                                                       sharded.parameters.size() * sizeof(float));
      const bool momentumIdentical = test::identicalOnAllRanks(sharded.momentum.data(),
                                                               sharded.momentum.size() * sizeof(float));
      INFO("n=" << comm.size() << " small buckets " << smallBuckets << " overlap " << overlap << ": "
                << sharded.report.sync << "; relative difference to replicated " << difference << " (momentum "
                << momentumDifference << "), moved " << moved << " from the start, steps " << sharded.report.lastStep);
      CHECK(sharded.report.sharded);
      CHECK(sharded.report.lastStep == 13);
      // Two ranks' sums do not depend on their order (a + b == b + a): there the runs agree bit for bit.
      const bool exact = comm.size() > 2 || (difference == 0 && momentumDifference == 0);
      REQUIRE(test::allRanks(difference <= kTolerance && momentumDifference <= kTolerance && moved > 0.01 &&
                             identical && momentumIdentical && exact && sharded.report.lastStep == 13 &&
                             replicated.report.lastStep == 13));
    }
}

TEST_CASE("shard: each rank keeps momentum for its shard only; the ranks' add up to one replica's",
          "[trainer][shard]") {
  Communicator comm(MPI_COMM_WORLD, bucketOptions(true));
  const TrainerConfig config = oneEpoch(true);
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, nullptr), nullptr);
  const std::size_t parameters = ModelLayout(config.layers).parameterCount();
  const std::size_t mine = trainer.optimizerStateBytes();
  const long long total = test::sumOverRanks(static_cast<long long>(mine));
  const RunReport report = trainer.run();
  const std::size_t n = static_cast<std::size_t>(comm.size());
  INFO("n=" << n << ": this rank's state " << mine << " bytes, all ranks' " << total << ", a replica's "
            << parameters * sizeof(float) << "; report: largest " << report.optimizerStateBytes << ", "
            << report.wireBytesPerStep << " bytes sent per step");
  // Each bucket's block is ceil(C / N): with at most 6 buckets (one per tensor), no rank holds more
  // than 1/N of the parameters plus 7 elements.
  const bool share = report.optimizerStateBytes <= (parameters / n + 7) * sizeof(float);
  REQUIRE(test::allRanks(total == static_cast<long long>(parameters * sizeof(float)) && share &&
                         report.replicatedStateBytes == parameters * sizeof(float) &&
                         report.optimizerStateBytes >= mine && (n == 1 || report.wireBytesPerStep > 0) &&
                         report.stepSeconds > 0));
}

TEST_CASE("shard: a sharded checkpoint resumes bit-identically, and in the other mode",
          "[trainer][shard][checkpoint]") {
  Communicator comm(MPI_COMM_WORLD, bucketOptions(true));
  fixtures::ScratchDir dir("trainer-shard-ckpt");
  // Stop mid-epoch (step 9 of 13), resume past the epoch's end (step 20).
  TrainerConfig straight = oneEpoch(true);
  straight.epochs = 2;
  straight.maxSteps = 20;
  TrainerConfig first = straight;
  first.maxSteps = 9;
  first.checkpointPath = dir.file("sharded.ckpt");
  first.checkpointEvery = 4;
  TrainerConfig second = first;
  second.maxSteps = 20;
  second.resume = true;
  TrainerConfig replicatedStraight = straight, replicatedSecond = second;
  replicatedStraight.shard = replicatedSecond.shard = false;
  replicatedSecond.checkpointPath = dir.file("copy.ckpt");  // the step-9 file (the sharded resume goes on saving)

  const fixtures::RunOutcome reference = fixtures::trainOn(comm, straight);
  fixtures::trainOn(comm, first);
  if (comm.rank() == 0)
    fixtures::writeBytes(replicatedSecond.checkpointPath, fixtures::readBytes(first.checkpointPath));
  comm.barrier();
  const fixtures::RunOutcome resumed = fixtures::trainOn(comm, second);
  // The same checkpoint, resumed without sharding, against a straight replicated run.
  const fixtures::RunOutcome replicatedReference = fixtures::trainOn(comm, replicatedStraight);
  const fixtures::RunOutcome replicatedResumed = fixtures::trainOn(comm, replicatedSecond);
  const double across = fixtures::relativeDifference(replicatedResumed.parameters, replicatedReference.parameters);
  INFO("resumed steps " << resumed.report.firstStep << ".." << resumed.report.lastStep
                        << "; replicated from the sharded checkpoint: relative difference " << across);
  REQUIRE(test::allRanks(resumed.report.firstStep == 9 && resumed.report.lastStep == 20 &&
                         sameBits(resumed.parameters, reference.parameters) &&
                         sameBits(resumed.momentum, reference.momentum) && replicatedResumed.report.firstStep == 9 &&
                         replicatedResumed.report.lastStep == 20 && across <= kTolerance));
}
