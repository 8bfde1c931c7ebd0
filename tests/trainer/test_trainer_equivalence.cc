// The defining property of synchronous data parallelism: k steps at n ranks with global batch B
// give the parameters 1 rank gets with batch B (relative difference <= 1e-5 in float32), and the
// n replicas are bit-identical. Each rank also trains the 1-rank reference alone (MPI_COMM_SELF).
// The batches are chosen so that B does not divide evenly over 2, 3 or 4 ranks (7, 13), so that
// some rank gets no sample at all (B = 3 at 4 ranks), and the epoch's short last batch is used.
#include <catch2/catch.hpp>

#include "ringsync/ringsync.h"
#include "support/test_support.h"
#include "model.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

namespace {

constexpr double kTolerance = 1e-5;

void checkEquivalent(const TrainerConfig& config) {
  Communicator world(MPI_COMM_WORLD);
  Communicator alone(MPI_COMM_SELF);
  const fixtures::RunOutcome parallel = fixtures::trainOn(world, config);
  const fixtures::RunOutcome reference = fixtures::trainOn(alone, config);
  const std::vector<float> initial = initialParameters(ModelLayout(config.layers), config.seed);

  const double difference = fixtures::relativeDifference(parallel.parameters, reference.parameters);
  const double moved = fixtures::relativeDifference(reference.parameters, initial);
  const bool identical = ringsync::test::identicalOnAllRanks(parallel.parameters.data(),
                                                             parallel.parameters.size() * sizeof(float));
  INFO("n=" << world.size() << " B=" << config.globalBatch << " steps=" << parallel.report.lastStep << " weight decay="
            << config.sgd.weightDecay << " overlap=" << (config.overlap ? (*config.overlap ? "on" : "off") : "auto")
            << ": relative difference to 1 rank " << difference << ", moved " << moved << " from the start");
  // The run must really have trained (else equality would prove nothing) and run every step.
  CHECK(parallel.report.lastStep == config.maxSteps);
  REQUIRE(ringsync::test::allRanks(difference <= kTolerance && moved > 0.01 && identical &&
                                   parallel.report.lastStep == config.maxSteps));
}

}  // namespace

TEST_CASE("equivalence: n ranks train like 1 rank with the same global batch", "[trainer][equivalence]") {
  // 90 samples: B=7 gives 12 full batches and one of 6, B=13 six and one of 12, B=3 thirty.
  for (std::size_t batch : {std::size_t{7}, std::size_t{13}, std::size_t{3}}) {
    const std::size_t steps = batch == 3 ? 12 : 2 * fixtures::smallConfig(batch, 0).syntheticSamples / batch + 3;
    checkEquivalent(fixtures::smallConfig(batch, steps));
  }
}

TEST_CASE("equivalence: with weight decay, warm-up, with and without overlap", "[trainer][equivalence]") {
  TrainerConfig config = fixtures::smallConfig(13, 16);
  config.sgd.weightDecay = 1e-3f;
  config.sgd.warmupSteps = 4;
  config.sgd.schedule = LrSchedule::kConstant;
  checkEquivalent(config);  // overlap unset: the averager decides
  config.overlap = true;
  checkEquivalent(config);
  config.overlap = false;
  checkEquivalent(config);
}
