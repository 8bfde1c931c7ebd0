#include "mpi_requirements.h"

#include <string>

#include <mpi.h>

#include "ringsync/errors.h"
#include "ringsync/mpi_environment.h"

namespace ringsync::torch_backend {

void requireMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw BackendError(
        "ringsync backend: MPI is not initialised (ringsync.init() in Python, a "
        "ringsync::MpiEnvironment in C++, first) or already finalised");
}

void requireThreadLevel() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw BackendError(std::string("ringsync backend: MPI provides ") + threadLevelName(provided) +
                       ", but process groups run their collectives on progress threads of their own, "
                       "which may call MPI at the same time: MPI_THREAD_MULTIPLE is needed. Let "
                       "ringsync.init() (ringsync::MpiEnvironment in C++) initialise MPI, or initialise it "
                       "with MPI_THREAD_MULTIPLE (mpi4py's default)");
}

}  // namespace ringsync::torch_backend
