// RAII for programs that do not manage MPI themselves: initialises MPI (asking for
// MPI_THREAD_MULTIPLE, which GradientAverager's overlap needs) unless someone already did,
// and finalises it on destruction only if it initialised it. Before initialising it sets
// OMPI_MCA_mpi_yield_when_idle=1 (Open MPI's progress loop yields the core when idle) unless that
// variable is already set or RINGSYNC_SPIN_WAIT=1 asks for spinning (options.h says why).
#pragma once

#include <mpi.h>

namespace ringsync {

class MpiEnvironment {
 public:
  MpiEnvironment(int* argc, char*** argv, int requiredThreadLevel = MPI_THREAD_MULTIPLE);
  MpiEnvironment() : MpiEnvironment(nullptr, nullptr) {}
  ~MpiEnvironment();  // MPI_Finalize if this object called MPI_Init_thread; never throws

  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  bool ownsMpi() const { return owns_; }
  int providedThreadLevel() const { return provided_; }

 private:
  bool owns_ = false;
  int provided_ = MPI_THREAD_SINGLE;
};

const char* threadLevelName(int level);

}  // namespace ringsync
