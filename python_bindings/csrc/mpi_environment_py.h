// MPI for Python programs: initialised on first use (a Communicator) with MPI_THREAD_MULTIPLE
// through ringsync::MpiEnvironment unless the program (or mpi4py) already did, and finalised by
// ringsync.finalize(), which the package registers with atexit (mpirun reports a failure otherwise).
#pragma once

namespace ringsync::python {

// Initialises MPI if nobody did; raises BackendError if it was already finalised. GIL held.
void ensureMpi();

}  // namespace ringsync::python
