// The Catch2 runner for tests under mpirun. Every rank runs the same tests in the same order.
// An unexpected exception on one rank would leave its peers waiting inside a collective, so the
// listener below ends the whole job at once instead (Open MPI tears it down in ~0.2 s).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "ringsync/mpi_environment.h"
#include "support/mpi_catch_runner.h"

namespace {

struct AbortOnUnexpectedException : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const auto type = stats.assertionResult.getResultType();
    if (type == Catch::ResultWas::ThrewException || type == Catch::ResultWas::FatalErrorCondition) {
      int rank = -1;
      MPI_Comm_rank(MPI_COMM_WORLD, &rank);
      std::fprintf(stderr, "rank %d: unexpected exception in '%s': %s -- aborting the job\n", rank,
                   currentTest_.c_str(), stats.assertionResult.getMessage().c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return true;
  }
  void testCaseStarting(const Catch::TestCaseInfo& info) override { currentTest_ = info.name; }
  std::string currentTest_;
};

}  // namespace

CATCH_REGISTER_LISTENER(AbortOnUnexpectedException)

namespace ringsync::test {

int runCatchUnderMpi(int argc, char** argv, int threadLevel) {
  ringsync::MpiEnvironment mpi(&argc, &argv, threadLevel);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  if (session.applyCommandLine(argc, argv) != 0) return 2;
  // Only rank 0 reports passing runs; every rank reports its own failures.
  if (rank != 0) session.configData().showSuccessfulTests = false;
  const int failures = session.run();
  int worst = 0;
  MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return std::min(worst, 255);
}

}  // namespace ringsync::test
