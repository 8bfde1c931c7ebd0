// Fault 5: a randomised API driver. At least 1000 calls mix valid collectives (every type, op,
// count class, in place or not, every root, two communicators) with invalid ones made by a random
// subset of ranks. Every valid call must give the exact result; every invalid one must raise
// InvalidArgument on each rank that made it, with its buffers byte-for-byte untouched; and the
// communicators must keep working. The seed is fixed (RINGSYNC_FAULTS_SEED overrides it) and is
// printed with any failure so the sequence can be replayed.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include "fault_support.h"
#include "random_calls.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

constexpr std::uint64_t kDefaultSeed = 20250607;
constexpr int kSteps = 1500;
constexpr double kInvalidShare = 0.35;
constexpr int kVerdictEvery = 25;  // steps between collective checks for a failure

std::uint64_t seedFromEnvironment() {
  const char* text = std::getenv("RINGSYNC_FAULTS_SEED");
  return text && *text ? std::strtoull(text, nullptr, 10) : kDefaultSeed;
}

}  // namespace

TEST_CASE("random API driver: valid calls exact, invalid calls rejected untouched", "[faults][random]") {
  const std::uint64_t seed = seedFromEnvironment();
  faults::report("random API: seed " + std::to_string(seed) +
                 " (replay with RINGSYNC_FAULTS_SEED=" + std::to_string(seed) + ")");
  Communicator first(MPI_COMM_WORLD);
  Communicator second = first.duplicate();
  faults::RandomCalls calls(seed, first.size());
  long long valid = 0, invalid = 0, wrongCount = 0;
  std::string firstWrong;
  for (int step = 0; step < kSteps; ++step) {
    Communicator& comm = calls.chance(0.25) ? second : first;
    faults::StepResult result;
    try {
      result = calls.chance(kInvalidShare) ? calls.invalidStep(comm) : calls.validStep(comm);
    } catch (const std::exception& error) {  // a valid call failed: report it, keep every rank going
      result = {true, false, std::string("a valid call raised: ") + error.what()};
    }
    if (result.called) (result.invalid ? invalid : valid) += 1;
    if (!result.wrong.empty() && wrongCount++ == 0) firstWrong = "step " + std::to_string(step) + ": " + result.wrong;
    // Stop together soon after a failure: later calls would only wait for ranks that gave up.
    if (step % kVerdictEvery == 0 && !test::allRanks(wrongCount == 0)) break;
  }
  // Still in step and working: one more exact call on each communicator.
  for (Communicator* comm : {&first, &second}) {
    long long value = comm->rank() + 1;
    const faults::Outcome outcome = faults::attempt(
        [&] { comm->allreduce(&value, &value, 1, DataType::kInt64, ReduceOp::kSum); });
    if ((!outcome.returned() || value != comm->size() * (comm->size() + 1) / 2) && wrongCount++ == 0)
      firstWrong = "the final all-reduce is wrong: " + outcome.message;
  }
  const long long allValid = test::sumOverRanks(valid), allInvalid = test::sumOverRanks(invalid);
  faults::report("random API np=" + std::to_string(first.size()) + " seed=" + std::to_string(seed) + ": " +
                 std::to_string(allValid) + " valid and " + std::to_string(allInvalid) +
                 " invalid calls over all ranks (" + std::to_string(kSteps) + " steps)");
  INFO("seed " << seed << " (replay with RINGSYNC_FAULTS_SEED=" << seed << "), rank " << first.rank() << ": "
               << wrongCount << " wrong, first: " << firstWrong);
  CHECK(valid + invalid >= 1000 / first.size());
  REQUIRE(test::allRanks(wrongCount == 0));
}
