"""Failures are ringsync's, named: unsupported ops, bad input at the call;
ranks that disagree through Work.wait() and the future, after which the group still works."""

import datetime
import time

import pytest
import torch
import torch.distributed as dist

import ringsync


@pytest.mark.parametrize("op", ["BAND", "BOR", "BXOR"])
def test_unsupported_reduce_ops_raise_naming_the_op(op):
    with pytest.raises(ringsync.InvalidArgument, match=f"allreduce with ReduceOp.{op} is not supported"):
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=getattr(dist.ReduceOp, op))


def test_premul_sum_is_unsupported():
    with pytest.raises(ringsync.InvalidArgument, match="PREMUL_SUM"):
        dist.reduce_scatter_tensor(torch.ones(1), torch.ones(dist.get_world_size()),
                                   op=dist._make_nccl_premul_sum(2.0))


@pytest.mark.parametrize("dtype", [torch.int16, torch.float8_e4m3fn] if hasattr(torch, "float8_e4m3fn")
                         else [torch.int16])
def test_unsupported_dtypes_raise_naming_the_dtype(dtype):
    with pytest.raises(ringsync.InvalidArgument, match=str(dtype)):
        dist.all_reduce(torch.zeros(3, dtype=dtype))


def test_bool_average_is_undefined():
    with pytest.raises(ringsync.InvalidArgument, match="bool tensor with op 'avg'"):
        dist.all_reduce(torch.ones(3, dtype=torch.bool), op=dist.ReduceOp.AVG)


def test_wrong_output_sizes_raise_before_sending():
    n = dist.get_world_size()
    with pytest.raises(ringsync.InvalidArgument, match="allgather needs"):
        dist.all_gather([torch.empty(2)] * (n + 1), torch.ones(2))
    with pytest.raises(ringsync.InvalidArgument, match="all_gather_into_tensor output must hold"):
        dist.all_gather_into_tensor(torch.empty(n * 2 + 1), torch.ones(2))
    with pytest.raises(ringsync.InvalidArgument, match="reduce_scatter_tensor input must hold"):
        dist.reduce_scatter_tensor(torch.empty(2), torch.ones(n * 2 + 1))


def test_a_count_mismatch_between_ranks_is_ringsync_mismatch_error_through_wait():
    rank = dist.get_rank()
    x = torch.ones(4 if rank == 0 else 5)
    work = dist.all_reduce(x, async_op=True)
    with pytest.raises(ringsync.MismatchError, match=r"count=4.*count=5|count=5.*count=4"):
        work.wait()
    # Nothing moved, so the group stays usable.
    y = torch.ones(3)
    dist.all_reduce(y)
    assert torch.equal(y, torch.full((3,), float(dist.get_world_size())))


def test_a_mismatch_in_a_synchronous_call_raises_at_the_call():
    rank = dist.get_rank()
    with pytest.raises(ringsync.MismatchError, match="broadcast"):
        dist.broadcast(torch.ones(3), src=0 if rank == 0 else 1)


def test_a_mismatch_reaches_the_future_with_ringsyncs_message():
    """The future is what DDP chains on: torch's C++ side sees it fail, with ringsync's message."""
    rank = dist.get_rank()
    x = torch.ones(2, dtype=torch.float32 if rank == 0 else torch.float64)
    work = dist.all_reduce(x, async_op=True)
    future = work.get_future()
    with pytest.raises(RuntimeError, match="MismatchError: .*(float32.*float64|float64.*float32)"):
        future.wait()
    assert work.is_completed() and not work.is_success()


def test_a_silent_peer_is_ringsync_timeout_error_then_aborted_error():
    """A group with a 1 s deadline (timeout= replaces ringsync's): rank 0 never calls."""
    n, rank = dist.get_world_size(), dist.get_rank()
    short = dist.new_group(backend="ringsync", timeout=datetime.timedelta(seconds=1))
    world = ringsync.Communicator()
    if rank != 0:
        start = time.monotonic()
        work = dist.all_reduce(torch.ones(4), group=short, async_op=True)
        with pytest.raises(ringsync.TimeoutError, match=r"timed out .* waiting for rank\(s\) 0") as info:
            work.wait()
        assert 0.9 <= time.monotonic() - start <= 10.0
        assert "allreduce" in str(info.value)
        with pytest.raises(ringsync.AbortedError, match="aborted"):
            dist.barrier(group=short)
    world.barrier()  # rank 0 waits here until its peers have timed out
    assert n >= 2
