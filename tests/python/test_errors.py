"""Every ringsync::Error becomes the Python exception of the same name, raised on every rank."""

import time

import numpy as np
import pytest

import ringsync

NAMES = ["InvalidArgument", "MismatchError", "TimeoutError", "AbortedError", "NonFiniteError", "BackendError"]


def test_the_exception_family():
    assert issubclass(ringsync.Error, RuntimeError)
    for name in NAMES:
        cls = getattr(ringsync, name)
        assert cls.__name__ == name and cls.__module__ == "ringsync"
        assert issubclass(cls, ringsync.Error) and cls is not ringsync.Error
    assert issubclass(ringsync.InvalidArgument, ValueError)
    assert len({getattr(ringsync, name) for name in NAMES}) == len(NAMES)


def needs_peers(comm):
    if comm.size < 2:
        pytest.skip("skipped: needs at least 2 ranks")


def test_mismatched_counts_raise_mismatch_error_on_every_rank(comm):
    needs_peers(comm)
    side = comm.duplicate()
    x = np.ones(4 + comm.rank, dtype=np.float32)
    with pytest.raises(ringsync.MismatchError, match="allreduce") as info:
        side.allreduce(x)
    assert "count" in str(info.value)
    assert (x == 1).all()


def test_mismatched_ops_raise_mismatch_error_on_every_rank(comm):
    needs_peers(comm)
    side = comm.duplicate()
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ringsync.MismatchError):
        side.allreduce(x, op="sum" if comm.rank == 0 else "max")


def test_nan_raises_non_finite_error_naming_the_rank(comm):
    needs_peers(comm)
    options = ringsync.Options.from_environment()
    options.check_finite = True
    checked = ringsync.Communicator(options=options)
    x = np.ones(8, dtype=np.float32)
    bad = comm.size - 1
    if comm.rank == bad:
        x[3] = np.nan
    with pytest.raises(ringsync.NonFiniteError, match=str(bad)):
        checked.allreduce(x)


def test_forced_backend_that_cannot_serve_raises_backend_error(comm):
    options = ringsync.Options.from_environment()
    options.backend = "nccl"
    forced = ringsync.Communicator(options=options)
    with pytest.raises(ringsync.BackendError, match="RINGSYNC_BACKEND=nccl"):
        forced.allreduce(np.ones(4, dtype=np.float32))


def test_a_silent_peer_raises_timeout_error_then_aborted_error(comm):
    needs_peers(comm)
    options = ringsync.Options.from_environment()
    options.timeout_seconds = 1.0
    short = ringsync.Communicator(options=options)
    silent = 0
    if comm.rank != silent:
        start = time.monotonic()
        with pytest.raises(ringsync.TimeoutError, match="rank") as info:
            short.allreduce(np.ones(4, dtype=np.float32))
        elapsed = time.monotonic() - start
        assert 0.9 <= elapsed <= 10.0, elapsed
        assert short.aborted and short.abort_reason
        with pytest.raises(ringsync.AbortedError, match="aborted"):
            short.barrier()
        assert str(silent) in str(info.value)
    comm.barrier()  # the silent rank waits here until its peers have timed out
