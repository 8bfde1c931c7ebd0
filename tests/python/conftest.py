"""Shared by the pytest suite that CTest runs under `mpirun -np 2` and `-np 3`.

Every rank runs the same tests in the same order and asserts on its own results. A failure on
any rank ends the whole job at once with MPI_Abort (after printing the failure), so peers never
wait in a collective for a rank that is gone and mpirun exits non-zero; RINGSYNC_TIMEOUT_SECONDS
(set small by CTest) and MPIEXEC_TIMEOUT are the backstops.
"""

import sys

import numpy as np
import pytest

import ringsync

# Integer and float types every build supports (bfloat16 needs ml_dtypes on the numpy side).
NUMPY_DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16, np.float32, np.float64]
OPS = ["sum", "prod", "min", "max", "avg"]


def _abort_job(what):
    rank = _world.rank if _world is not None else "?"
    sys.stderr.write(f"\n[rank {rank}] FAILED: {what}\n")
    sys.stderr.flush()
    ringsync.abort(1)


_world = None


@pytest.fixture(scope="session")
def comm():
    """One world communicator shared by the tests (its deadline comes from RINGSYNC_TIMEOUT_SECONDS)."""
    global _world
    _world = ringsync.Communicator()
    return _world


def pytest_runtest_logreport(report):
    if report.failed:
        _abort_job(f"{report.nodeid} ({report.when})\n{report.longreprtext}")


def pytest_collectreport(report):
    if report.failed:
        _abort_job(f"collecting {report.nodeid}\n{report.longreprtext}")


def pytest_sessionfinish(session, exitstatus):
    # Anything else that makes pytest fail on one rank (no tests collected, an internal error).
    if exitstatus != 0:
        _abort_job(f"pytest exit status {int(exitstatus)}")
