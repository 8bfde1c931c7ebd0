// Fault 4 (in-process half): a rank throws in user code between collectives and its handler stops
// using the communicator. The other ranks, already in the next collective, must raise TimeoutError
// naming that rank within RINGSYNC_TIMEOUT_SECONDS + 2 s, and their communicator must then refuse
// every call with AbortedError saying why. (The other half, a handler that calls MPI_Abort, is
// test_fault_throw_abort: fault_driver under expect_job_failure.sh.)
#include <catch2/catch.hpp>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "fault_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

constexpr int kSteps = 6;
constexpr int kFailingStep = 3;

// One "training step": user code (which may throw), then an all-reduce of the step's gradients.
void trainingStep(Communicator& comm, std::vector<float>& gradient, int step, bool userCodeFails) {
  if (userCodeFails) throw std::runtime_error("user code failed at step " + std::to_string(step));
  for (float& g : gradient) g = static_cast<float>(comm.rank() + step);
  comm.allreduce(gradient.data(), gradient.data(), gradient.size(), DataType::kFloat32, ReduceOp::kSum);
}

}  // namespace

TEST_CASE("user throw: the others time out naming the rank and the communicator refuses further calls",
          "[faults][throw]") {
  const int n = test::worldSize();
  if (n == 1) {
    SUCCEED("a single rank has no peer to wait for");
    return;
  }
  const double timeout = Options::fromEnvironment().timeoutSeconds;
  REQUIRE(timeout > 0);
  REQUIRE(timeout <= 5);
  for (std::size_t count : {std::size_t{100}, std::size_t{200000}, std::size_t{3000000}}) {  // direct, split, ring
    const int thrower = count == 100 ? n - 1 : 0;
    Communicator comm(MPI_COMM_WORLD);
    std::vector<float> gradient(count);
    std::string userError;
    faults::Outcome failure;
    int stepsDone = 0;
    bool exact = true;
    for (int step = 0; step < kSteps; ++step) {
      const bool fails = comm.rank() == thrower && step == kFailingStep;
      try {
        trainingStep(comm, gradient, step, fails);
        const float want = static_cast<float>(n * step + n * (n - 1) / 2);
        exact = exact && gradient.front() == want && gradient.back() == want;
        ++stepsDone;
      } catch (const Error& error) {  // ringsync's own failure: the handler records it and stops
        failure = {errorCodeName(error.code()), error.what(), 0};
        break;
      } catch (const std::exception& error) {  // the user's failure: stop using the communicator
        userError = error.what();
        break;
      }
    }
    const std::uint64_t failedCall = static_cast<std::uint64_t>(kFailingStep);
    faults::Outcome later;  // the thrower's handler no longer uses the communicator
    if (comm.rank() != thrower) later = faults::attempt([&] { comm.barrier(); });

    std::ostringstream why;
    bool ok = exact && stepsDone == kFailingStep;
    if (comm.rank() == thrower) {
      ok = ok && userError == "user code failed at step 3" && !comm.aborted();
    } else {
      const std::string named = "waiting for rank(s) " + std::to_string(thrower) + " (";
      const std::string call = "allreduce #" + std::to_string(failedCall) + " count=" + std::to_string(count);
      ok = ok && failure.error == "TimeoutError" && failure.message.find(call) != std::string::npos &&
           failure.message.find(named) != std::string::npos && comm.aborted() &&
           comm.abortReason().find(named) != std::string::npos && later.error == "AbortedError" &&
           later.message.find("was aborted") != std::string::npos && later.message.find(named) != std::string::npos;
    }
    why << "steps done " << stepsDone << ", user error '" << userError << "', ringsync error " << failure.error << ": "
        << failure.message << " | later " << later.error << ": " << later.message;
    INFO("count " << count << ", rank " << comm.rank() << " (rank " << thrower << " threw): " << why.str());
    REQUIRE(test::allRanks(ok));
  }
}

TEST_CASE("user throw: time to error is within the deadline", "[faults][throw]") {
  // The same fault, timed: the survivors' error must come within timeout + 2 s of entering the call.
  const int n = test::worldSize();
  if (n == 1) return;
  const double timeout = Options::fromEnvironment().timeoutSeconds;
  Communicator comm(MPI_COMM_WORLD);
  const int thrower = n / 2;
  std::vector<float> gradient(1000, 1.0f);
  faults::Outcome outcome;
  if (comm.rank() != thrower) {
    outcome = faults::attempt([&] { trainingStep(comm, gradient, 0, false); });
  } else {
    outcome = faults::attempt([&] { trainingStep(comm, gradient, 0, true); });
  }
  const bool ok = comm.rank() == thrower ? outcome.error == "std::exception"
                                         : outcome.error == "TimeoutError" && outcome.seconds <= timeout + 2.0;
  const double worst = faults::maxOverRanks(comm.rank() == thrower ? 0.0 : outcome.seconds);
  faults::report("user throw np=" + std::to_string(n) + " thrower=" + std::to_string(thrower) +
                 ": survivors raised TimeoutError after at most " + std::to_string(worst) +
                 " s (RINGSYNC_TIMEOUT_SECONDS=" + std::to_string(timeout) + ")");
  INFO("rank " << comm.rank() << ": " << outcome.error << " after " << outcome.seconds << " s: " << outcome.message);
  REQUIRE(test::allRanks(ok));
}
