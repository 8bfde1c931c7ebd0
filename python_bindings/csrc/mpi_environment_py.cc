#include "mpi_environment_py.h"

#include <memory>

#include <mpi.h>

#include "bindings.h"
#include "lifetime.h"
#include "ringsync/errors.h"
#include "ringsync/mpi_environment.h"

namespace ringsync::python {
namespace {

// Process-wide, like MPI itself; only touched with the GIL held.
std::unique_ptr<MpiEnvironment>& environment() {
  static std::unique_ptr<MpiEnvironment> env;
  return env;
}

bool mpiFinalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

bool mpiInitialized() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized != 0;
}

// Frees every ringsync object's MPI resources, then MPI_Finalize if ringsync initialised MPI.
void finalize() {
  releaseAllMpiResources();
  environment().reset();
}

const char* threadLevel() {
  if (!mpiInitialized() || mpiFinalized()) return "none";
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return threadLevelName(provided);
}

}  // namespace

void ensureMpi() {
  if (mpiFinalized())
    throw BackendError(
        "MPI was already finalized (ringsync.finalize() or interpreter exit); it cannot be "
        "initialised again in this process");
  if (!mpiInitialized()) environment() = std::make_unique<MpiEnvironment>();
}

void registerMpiEnvironment(nb::module_& m) {
  m.def("init", &ensureMpi,
        "Initialise MPI (MPI_THREAD_MULTIPLE) unless it already is. Communicator() calls this itself.");
  m.def("finalize", &finalize,
        "Release every ringsync object's MPI resources, then MPI_Finalize if ringsync initialised MPI. "
        "Registered with atexit by `import ringsync`; safe to call more than once.");
  m.def(
      "is_initialized", [] { return mpiInitialized() && !mpiFinalized(); },
      "True while MPI is initialised and not yet finalised.");
  m.def(
      "owns_mpi", [] { return environment() && environment()->ownsMpi(); },
      "True when ringsync initialised MPI (and so finalises it at exit).");
  m.def("thread_level", &threadLevel,
        "MPI's provided thread level, e.g. 'MPI_THREAD_MULTIPLE' ('none' if not initialised).");
  m.def(
      "abort",
      [](int errorCode) {
        if (mpiInitialized() && !mpiFinalized()) MPI_Abort(MPI_COMM_WORLD, errorCode);
      },
      nb::arg("errorcode") = 1,
      "MPI_Abort(MPI_COMM_WORLD): end every rank of the job now (e.g. after an unrecoverable error on one "
      "rank, so its peers do not wait for it). Does nothing if MPI is not initialised.");
}

}  // namespace ringsync::python
