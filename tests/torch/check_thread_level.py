"""A ringsync process group refuses MPI initialised below MPI_THREAD_MULTIPLE (groups run their
collectives on progress threads of their own, which may call MPI at the same time): mpi4py
initialises MPI at the level given on the command line (funneled or serialized) first, and
creating the group raises BackendError naming the level on every rank, before any collective.
Exits 77 (skipped) when MPI grants MPI_THREAD_MULTIPLE anyway (the standard allows more)."""

import sys

import mpi4py

LEVEL = sys.argv[1] if len(sys.argv) > 1 else "funneled"
mpi4py.rc.thread_level = LEVEL
from mpi4py import MPI  # noqa: E402  (initialises MPI at the level set above)

import ringsync  # noqa: E402
import ringsync.torch  # noqa: E402

NAMES = {MPI.THREAD_SINGLE: "MPI_THREAD_SINGLE", MPI.THREAD_FUNNELED: "MPI_THREAD_FUNNELED",
         MPI.THREAD_SERIALIZED: "MPI_THREAD_SERIALIZED", MPI.THREAD_MULTIPLE: "MPI_THREAD_MULTIPLE"}


def main():
    provided = MPI.Query_thread()
    if provided >= MPI.THREAD_MULTIPLE:
        print(f"thread_level: SKIPPED (MPI gave MPI_THREAD_MULTIPLE for a request of {LEVEL})")
        return 77
    try:
        ringsync.torch.init_process_group()
    except ringsync.BackendError as error:
        message = str(error)
    else:
        message = ""
    ok = NAMES[provided] in message and "MPI_THREAD_MULTIPLE is needed" in message
    everyone = MPI.COMM_WORLD.allreduce(int(ok), op=MPI.MIN)
    if not ok:
        print(f"rank {MPI.COMM_WORLD.rank}: expected BackendError naming {NAMES[provided]}, got {message!r}")
    if everyone and MPI.COMM_WORLD.rank == 0:
        print(f"thread_level: {MPI.COMM_WORLD.size} ranks refused {NAMES[provided]}: {message}")
    return 0 if everyone else 1


if __name__ == "__main__":
    sys.exit(main())
