"""Run under mpirun by CTest: when mpi4py initialises MPI first, ringsync uses it, accepts its
communicators, and leaves MPI_Finalize to mpi4py (the job must still exit with rc 0)."""

import sys

try:
    from mpi4py import MPI  # initialises MPI before ringsync sees it
except ImportError:
    print("skipped: mpi4py is not installed")
    sys.exit(0)

import numpy as np

import ringsync

world = MPI.COMM_WORLD
assert ringsync.is_initialized() and not ringsync.owns_mpi()
comm = ringsync.Communicator(world)
x = np.full(4, world.Get_rank() + 1.0)
comm.allreduce(x)
n = world.Get_size()
assert (x == n * (n + 1) / 2).all(), x
half = ringsync.Communicator(world.Split(world.Get_rank() % 2, 0))
y = np.ones(2, np.int64)
half.allreduce(y)
assert (y == (n + 1 - world.Get_rank() % 2) // 2).all(), y
ringsync.finalize()  # releases ringsync's communicators; MPI stays up for mpi4py
assert MPI.Is_initialized() and not MPI.Is_finalized()
world.Barrier()
print("mpi4py: ok")
