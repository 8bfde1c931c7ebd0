#pragma once
// The Catch2 session every test binary runs under mpirun (mpi_catch_runner.cc).

namespace ringsync::test {

// Initialises MPI at `threadLevel` (ringsync::MpiEnvironment), runs the tests on every rank and
// returns the worst failure count over all ranks, so mpirun (and CTest) fail if any rank failed.
int runCatchUnderMpi(int argc, char** argv, int threadLevel);

}  // namespace ringsync::test
