// Catch2 main for the fallback tests: like tests/support/mpi_main.cc, but MPI is initialised with
// MPI_THREAD_SERIALIZED, below what GradientAverager's overlap needs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>

#include "ringsync/mpi_environment.h"

namespace {

// An unexpected exception on one rank would leave its peers waiting: end the job at once.
struct AbortOnUnexpectedException : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    const auto type = stats.assertionResult.getResultType();
    if (type == Catch::ResultWas::ThrewException || type == Catch::ResultWas::FatalErrorCondition) {
      std::fprintf(stderr, "unexpected exception: %s -- aborting the job\n", stats.assertionResult.getMessage().c_str());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    return true;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(AbortOnUnexpectedException)

int main(int argc, char** argv) {
  ringsync::MpiEnvironment mpi(&argc, &argv, MPI_THREAD_SERIALIZED);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  Catch::Session session;
  if (session.applyCommandLine(argc, argv) != 0) return 2;
  if (rank != 0) session.configData().showSuccessfulTests = false;
  const int failures = session.run();
  int worst = 0;
  MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return std::min(worst, 255);
}
