"""A ringsync process group refuses MPI initialised below MPI_THREAD_SERIALIZED (its collectives
run on a progress thread): mpi4py initialises MPI with MPI_THREAD_FUNNELED first, and creating
the group raises BackendError naming the level on every rank, before any collective (no hang)."""

import sys

import mpi4py

mpi4py.rc.thread_level = "funneled"
from mpi4py import MPI  # noqa: E402  (initialises MPI at the level set above)

import torch.distributed as dist  # noqa: E402

import ringsync  # noqa: E402
import ringsync.torch  # noqa: E402


def main():
    provided = MPI.Query_thread()
    if provided >= MPI.THREAD_SERIALIZED:
        print(f"thread_level: MPI gave level {provided} for a request of FUNNELED; nothing to check")
        return 1
    try:
        ringsync.torch.init_process_group()
    except ringsync.BackendError as error:
        message = str(error)
    else:
        message = ""
    ok = "MPI_THREAD_FUNNELED" in message and "MPI_THREAD_SERIALIZED" in message
    everyone = MPI.COMM_WORLD.allreduce(int(ok), op=MPI.MIN)
    if not ok:
        print(f"rank {MPI.COMM_WORLD.rank}: expected BackendError naming the thread levels, got {message!r}")
    if everyone and MPI.COMM_WORLD.rank == 0:
        print(f"thread_level: {MPI.COMM_WORLD.size} ranks refused MPI_THREAD_FUNNELED: {message}")
    return 0 if everyone else 1


if __name__ == "__main__":
    sys.exit(main())
