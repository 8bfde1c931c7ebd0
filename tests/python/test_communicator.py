"""The Communicator object: ranks, MPI bootstrap, duplicate, barrier, options, the GIL."""

import threading
import time

import numpy as np
import pytest

import ringsync


def test_ranks_and_sizes(comm):
    ranks = np.zeros(comm.size, dtype=np.int32)
    ranks[comm.rank] = 1
    comm.allreduce(ranks)
    assert (ranks == 1).all(), "every rank number appears exactly once"
    assert 0 <= comm.local_rank < comm.local_size <= comm.size
    assert repr(comm) == f"ringsync.Communicator(rank={comm.rank}, size={comm.size})"


def test_mpi_was_initialised_by_ringsync_with_thread_multiple(comm):
    assert ringsync.is_initialized() and ringsync.owns_mpi()
    assert ringsync.thread_level() == "MPI_THREAD_MULTIPLE"
    ringsync.init()  # already initialised: nothing happens


def test_each_collective_is_one_call(comm):
    before = comm.call_count
    comm.barrier()
    comm.allreduce(np.ones(3))
    comm.broadcast(np.ones(3))
    assert comm.call_count == before + 3
    assert comm.last_placement == {"backend": "host-ring", "algorithm": comm.last_placement["algorithm"], "device": -1}


def test_duplicate_is_independent(comm):
    dup = comm.duplicate()
    assert (dup.rank, dup.size) == (comm.rank, comm.size)
    before = comm.call_count
    x = np.full(5, comm.rank, dtype=np.int64)
    dup.allreduce(x, op="max")
    assert (x == comm.size - 1).all() and comm.call_count == before and dup.call_count == 1


def test_options_round_trip(comm):
    o = comm.options
    assert isinstance(o, ringsync.Options)
    assert o.describe().startswith("RINGSYNC_RING_SEGMENT_BYTES=")
    mine = ringsync.Options()
    mine.small_bytes = 1024
    mine.algorithm = "ring"
    mine.timeout_seconds = 30.0
    c = ringsync.Communicator(options=mine)
    assert c.options.algorithm == "ring" and c.options.small_bytes == 1024
    x = np.ones(10, dtype=np.float32)
    c.allreduce(x)
    assert (x == comm.size).all() and c.last_placement["algorithm"] == "ring"


def test_every_algorithm_can_be_chosen_from_python(comm):
    mine = ringsync.Options()
    for name in ("auto", "ring", "direct", "split", "hierarchical", "recursive_doubling", "mpi"):
        mine.algorithm = name
        assert mine.algorithm == name
    with pytest.raises(ringsync.InvalidArgument, match="algorithm"):
        mine.algorithm = "butterfly"
    # Forced on one node, recursive doubling runs (with a logged fallback where it cannot).
    mine.algorithm = "recursive_doubling"
    c = ringsync.Communicator(options=mine)
    x = np.full(1000, comm.rank + 1, dtype=np.float32)
    c.allreduce(x)
    assert (x == comm.size * (comm.size + 1) / 2).all()


def test_the_gil_is_released_while_a_collective_waits(comm):
    """Rank 0 enters late; the others wait in allreduce on a thread while their main thread runs Python."""
    x = np.ones(4, dtype=np.float32)
    comm.barrier()  # start together, so rank 0's delay is what the others wait for
    if comm.rank == 0:
        time.sleep(0.5)
        comm.allreduce(x)
    else:
        worker = threading.Thread(target=comm.allreduce, args=(x,))
        worker.start()
        spins = 0
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:
            spins += 1
        still_waiting = worker.is_alive()
        worker.join()
        assert still_waiting and spins > 1000, (still_waiting, spins)
    assert (x == comm.size).all()


def test_mpi4py_communicator():
    MPI = pytest.importorskip("mpi4py.MPI", reason="mpi4py is not installed")
    split = MPI.COMM_WORLD.Split(MPI.COMM_WORLD.Get_rank() % 2, 0)
    c = ringsync.Communicator(split)
    assert (c.rank, c.size) == (split.Get_rank(), split.Get_size())
    x = np.ones(3)
    c.allreduce(x)
    assert (x == split.Get_size()).all()
