#include "ringsync/mpi_environment.h"

#include <cstdlib>
#include <cstring>

#include "collectives/mpi_check.h"

namespace ringsync {
namespace {

// Open MPI's progress loop busy-polls by default. Every wait of ours enters it (MPI_Test), and the
// program's own MPI calls spin in it too; on cores shared with the kernel's network processing
// that costs milliseconds per message across nodes (measured: an 8 B all-reduce between two
// simulated hosts on 2 cores, ~0.2 ms with ringsync's yielding waits alone, ~0.05 ms with Open
// MPI yielding too, bench/RESULTS.md). So unless the user chose (the variable is set) or asked
// for spinning (RINGSYNC_SPIN_WAIT=1), ask Open MPI to yield when idle; it reads the variable in
// MPI_Init. Other MPI implementations ignore it.
void preferYieldingProgress() {
  const char* spin = std::getenv("RINGSYNC_SPIN_WAIT");
  if (spin &&
      (!std::strcmp(spin, "1") || !std::strcmp(spin, "on") || !std::strcmp(spin, "true") || !std::strcmp(spin, "yes")))
    return;
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", /*overwrite=*/0);
}

}  // namespace

MpiEnvironment::MpiEnvironment(int* argc, char*** argv, int requiredThreadLevel) {
  int initialized = 0;
  RINGSYNC_CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized) {
    preferYieldingProgress();
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
