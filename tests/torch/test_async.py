"""Collectives complete later, on the group's C++ progress thread, in the order they were issued."""

import sys
import threading
import time

import pytest
import torch
import torch.distributed as dist

import ringsync
import ringsync.torch


def test_all_reduce_returns_before_the_peers_arrive_and_completes_later():
    n, rank = dist.get_world_size(), dist.get_rank()
    world = ringsync.Communicator()  # independent of torch: lines the ranks up around the test
    world.barrier()
    x = torch.full((1000,), float(rank))
    if rank != 0:
        time.sleep(0.5)  # rank 0's call cannot complete before this
    start = time.perf_counter()
    work = dist.all_reduce(x, async_op=True)
    returned = time.perf_counter() - start
    pending = not work.is_completed()
    work.wait()
    if rank == 0:
        assert returned < 0.25, f"all_reduce(async_op=True) blocked for {returned:.3f} s"
        assert pending, "the work was complete before the peers had called"
    assert work.is_completed() and torch.equal(x, torch.full((1000,), n * (n - 1) / 2))


def test_many_works_in_flight_complete_in_order_with_their_own_results():
    n, rank = dist.get_world_size(), dist.get_rank()
    tensors = [torch.full((k * 100 + 1,), float(rank + k)) for k in range(20)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future() for w in works]
    torch.futures.wait_all(futures)
    for k, (t, f) in enumerate(zip(tensors, futures)):
        assert torch.equal(t, torch.full_like(t, n * k + n * (n - 1) / 2))
        assert f.value()[0] is t or torch.equal(f.value()[0], t)


def test_future_callbacks_see_the_result():
    n = dist.get_world_size()
    x = torch.ones(8)
    chained = dist.all_reduce(x, async_op=True).get_future().then(lambda f: f.value()[0] * 2)
    assert torch.equal(chained.wait(), torch.full((8,), 2.0 * n))


def test_a_synchronous_call_behind_queued_ones_waits_its_turn():
    """async_op=False runs on the caller's thread only when nothing is queued; otherwise in order."""
    n, rank = dist.get_world_size(), dist.get_rank()
    big = torch.full((1 << 20,), float(rank))
    work = dist.all_reduce(big, async_op=True)
    small = torch.full((4,), float(rank + 1))
    dist.all_reduce(small)  # queued behind `big` on every rank, or run here once it is done
    assert work.is_completed()
    assert torch.equal(small, torch.full((4,), n * (n + 1) / 2))
    work.wait()
    assert torch.equal(big, torch.full((1 << 20,), n * (n - 1) / 2))


def test_the_backend_is_cpp():
    """The group's CPU backend is the C++ ProcessGroupRingsync (a c10d Backend, not a Python ProcessGroup)."""
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    assert isinstance(backend, ringsync.torch.ProcessGroupRingsync), type(backend)
    assert isinstance(backend, dist.ProcessGroup) is False


def test_collectives_complete_while_the_caller_holds_the_gil():
    """The progress thread never takes the GIL: the all-reduce runs while this thread keeps it.

    With a 10 s switch interval a thread that needed the GIL would wait that long for it; this
    thread polls the tensor itself (no call that could release the GIL) until the sum arrives.
    """
    n, rank = dist.get_world_size(), dist.get_rank()
    world = ringsync.Communicator()
    world.barrier()
    x = torch.full((1000,), float(rank + 1))
    expected = n * (n + 1) / 2
    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    try:
        work = dist.all_reduce(x, async_op=True)
        start = time.perf_counter()
        while x[-1].item() != expected and time.perf_counter() - start < 5.0:
            pass
        elapsed = time.perf_counter() - start
    finally:
        sys.setswitchinterval(interval)
    work.wait()
    assert elapsed < 5.0, "the all-reduce did not run while the caller held the GIL"
    assert torch.equal(x, torch.full((1000,), expected))


def test_callbacks_of_a_pending_work_run_off_the_callers_thread():
    rank = dist.get_rank()
    world = ringsync.Communicator()
    world.barrier()
    if rank != 0:
        time.sleep(0.3)  # rank 0 attaches its callback before the collective can complete
    ran_on = []
    work = dist.all_reduce(torch.ones(4), async_op=True)
    chained = work.get_future().then(lambda f: ran_on.append(threading.get_ident()))
    chained.wait()
    if rank == 0:
        assert ran_on and ran_on[0] != threading.get_ident()


def test_a_shut_down_group_refuses_calls_with_aborted_error():
    group = dist.new_group(backend="ringsync")
    x = torch.ones(3)
    dist.all_reduce(x, group=group)
    assert torch.equal(x, torch.full((3,), float(dist.get_world_size())))
    group.shutdown()
    with pytest.raises(ringsync.AbortedError, match="shut down"):
        dist.all_reduce(x, group=group)
    dist.destroy_process_group(group)
