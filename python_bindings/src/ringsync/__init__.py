"""ringsync: ring all-reduce for synchronous data-parallel training, from Python.

    import numpy as np, ringsync
    comm = ringsync.Communicator()          # initialises MPI if nobody did
    grad = np.ones(1000, dtype=np.float32)
    comm.allreduce(grad, op="avg")          # in place, identical on every rank

Launch with `mpirun -np N python train.py`. MPI is finalised at interpreter exit.
"""

import atexit as _atexit

from ._build_config import WITH_CUDA as _WITH_CUDA

if _WITH_CUDA:
    from ._shared_nccl import load_the_newest_nccl as _load_the_newest_nccl

    _load_the_newest_nccl()  # before _ringsync links libnccl.so.2: see _shared_nccl.py

from ._ringsync import (
    AbortedError,
    BackendError,
    Communicator,
    Error,
    GradientAverager,
    InvalidArgument,
    MismatchError,
    NonFiniteError,
    Options,
    TimeoutError,
    __version__,
    abort,
    dtypes,
    finalize,
    init,
    is_initialized,
    ops,
    owns_mpi,
    thread_level,
    with_cuda,
)

# Releases every communicator before MPI_Finalize; without it mpirun reports a failed job even
# when every rank succeeded.
_atexit.register(finalize)

__all__ = [
    "AbortedError",
    "BackendError",
    "Communicator",
    "Error",
    "GradientAverager",
    "InvalidArgument",
    "MismatchError",
    "NonFiniteError",
    "Options",
    "TimeoutError",
    "__version__",
    "abort",
    "dtypes",
    "finalize",
    "init",
    "is_initialized",
    "ops",
    "owns_mpi",
    "thread_level",
    "with_cuda",
]
