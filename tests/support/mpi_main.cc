// main() of the test binaries: Catch2 under mpirun with MPI_THREAD_MULTIPLE (what
// GradientAverager's progress thread needs). A binary that needs another thread level brings its
// own main (tests/fusion/serialized_main.cc), and the linker then leaves this one out.
#include <mpi.h>

#include "support/mpi_catch_runner.h"

int main(int argc, char** argv) { return ringsync::test::runCatchUnderMpi(argc, argv, MPI_THREAD_MULTIPLE); }
