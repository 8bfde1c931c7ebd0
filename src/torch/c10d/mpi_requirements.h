// What every process group needs of MPI, checked before anything collective is started for one, so
// that a group that cannot be made fails on every rank instead of hanging some.
#pragma once

namespace ringsync::torch_backend {

// BackendError unless MPI is initialised and not yet finalised.
void requireMpi();

// BackendError naming the level unless MPI provides MPI_THREAD_MULTIPLE: each process group runs
// its collectives on a progress thread of its own, or on whichever thread waits for them (DDP's
// hooks run on autograd's), while other groups' threads and the caller may be in MPI at the same
// moment.
void requireThreadLevel();

}  // namespace ringsync::torch_backend
