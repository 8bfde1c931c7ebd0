"""Shared by the torch pytest suite that CTest runs under `mpirun -np 2` and `-np 3`.

The default process group is "ringsync", made with torch's usual arguments (init_method tcp://,
rank, world_size; rank and size come from MPI here, the port from rank 0). A "gloo" group over
the same ranks is the reference the training tests compare with. Every rank runs the same tests
in the same order; a failure on any rank ends the whole job at once with MPI_Abort (after printing
it), so no peer waits in a collective for a rank that is gone.
"""

import os
import socket
import sys

import numpy as np
import pytest
import torch
import torch.distributed as dist

import ringsync
import ringsync.torch  # noqa: F401 - registers backend "ringsync"

# The closed forms and the abort-on-failure hooks of the numpy suite (tests/python) serve here too.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from mpi_abort_on_failure import AbortJobOnFailure  # noqa: E402

_world = None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _init():
    global _world
    _world = ringsync.Communicator()
    port = np.array([_free_port() if _world.rank == 0 else 0], dtype=np.int64)
    _world.broadcast(port, root=0)
    dist.init_process_group("ringsync", init_method=f"tcp://127.0.0.1:{int(port[0])}", rank=_world.rank,
                            world_size=_world.size)
    return dist.new_group(backend="gloo")


@pytest.fixture(scope="session")
def gloo():
    """The gloo group over every rank (the default group, ringsync's, is made with it)."""
    return _gloo


@pytest.fixture(scope="session")
def world():
    """A ringsync.Communicator over every rank, independent of torch (for cross-checks)."""
    return _world


def pytest_configure(config):
    global _gloo
    config.pluginmanager.register(AbortJobOnFailure(lambda: _world), "abort_job_on_failure")
    _gloo = _init()


def pytest_sessionfinish(session, exitstatus):
    dist.destroy_process_group()  # after a failure the registered hooks have aborted the job already


def same_on_every_rank(tensor, group):
    """True when every rank holds exactly `tensor` (checked through `group`, bit for bit)."""
    reference = tensor.clone()
    dist.broadcast(reference, src=0, group=group)
    agree = torch.tensor([int(torch.equal(reference, tensor))], dtype=torch.int32)
    dist.all_reduce(agree, op=dist.ReduceOp.MIN, group=group)
    return bool(agree.item())
