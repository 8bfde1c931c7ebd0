"""Run under mpirun by CTest: ringsync.finalize() releases every object before MPI_Finalize, after
which they raise instead of touching MPI, and the job still exits cleanly (rc 0). The pytest runs
cover the other path: finalize() from atexit alone."""

import sys

import numpy as np

import ringsync

assert not ringsync.is_initialized(), "importing ringsync must not initialise MPI"
comm = ringsync.Communicator()
dup = comm.duplicate()
grads = [np.ones(10, np.float32)]
averager = ringsync.GradientAverager(comm, grads)
averager.average_all()
assert ringsync.is_initialized() and ringsync.owns_mpi()

ringsync.finalize()
ringsync.finalize()  # idempotent
assert not ringsync.is_initialized() and ringsync.thread_level() == "none"

failures = []
for name, call in [
    ("allreduce", lambda: comm.allreduce(np.ones(3))),
    ("dup.barrier", dup.barrier),
    ("rank", lambda: comm.rank),
    ("average_all", averager.average_all),
]:
    try:
        call()
        failures.append(f"{name} did not raise after finalize()")
    except ringsync.AbortedError as error:
        if "finalize" not in str(error):
            failures.append(f"{name}: unexpected message {error}")
try:
    ringsync.Communicator()
    failures.append("Communicator() after finalize() did not raise")
except ringsync.BackendError as error:
    if "finalized" not in str(error):
        failures.append(f"Communicator(): unexpected message {error}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("lifetime: ok")
