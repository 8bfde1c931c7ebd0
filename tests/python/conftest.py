"""Shared by the pytest suite that CTest runs under `mpirun -np 2` and `-np 3`.

Every rank runs the same tests in the same order and asserts on its own results. A failure on
any rank ends the whole job at once with MPI_Abort (after printing the failure), so peers never
wait in a collective for a rank that is gone and mpirun exits non-zero; RINGSYNC_TIMEOUT_SECONDS
(set small by CTest) and MPIEXEC_TIMEOUT are the backstops.
"""

import numpy as np
import pytest

import ringsync
from mpi_abort_on_failure import AbortJobOnFailure

# Integer and float types every build supports (bfloat16 needs ml_dtypes on the numpy side).
NUMPY_DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
OPS = ["sum", "prod", "min", "max", "avg"]


_world = None


def pytest_configure(config):
    config.pluginmanager.register(AbortJobOnFailure(lambda: _world), "abort_job_on_failure")


@pytest.fixture(scope="session")
def comm():
    """One world communicator shared by the tests (its deadline comes from RINGSYNC_TIMEOUT_SECONDS)."""
    global _world
    _world = ringsync.Communicator()
    return _world
