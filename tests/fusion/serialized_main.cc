// main() of the fallback tests: Catch2 under mpirun, but MPI initialised with
// MPI_THREAD_SERIALIZED, below what GradientAverager's overlap needs.
#include <mpi.h>

#include "support/mpi_catch_runner.h"

int main(int argc, char** argv) { return ringsync::test::runCatchUnderMpi(argc, argv, MPI_THREAD_SERIALIZED); }
