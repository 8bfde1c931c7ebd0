#include "ringsync/mpi_environment.h"

#include "collectives/mpi_check.h"

namespace ringsync {

MpiEnvironment::MpiEnvironment(int* argc, char*** argv, int requiredThreadLevel) {
  int initialized = 0;
  RINGSYNC_CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    RINGSYNC_CHECK_MPI(MPI_Init_thread(argc, argv, requiredThreadLevel, &provided_));
    owns_ = true;
  } else {
    RINGSYNC_CHECK_MPI(MPI_Query_thread(&provided_));
  }
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

const char* threadLevelName(int level) {
  switch (level) {
    case MPI_THREAD_SINGLE: return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED: return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED: return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE: return "MPI_THREAD_MULTIPLE";
  }
  return "unknown MPI thread level";
}

}  // namespace ringsync
