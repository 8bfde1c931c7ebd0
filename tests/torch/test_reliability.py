"""What issue 36 (items 6, 8, 9) suspected of the torch backend, each checked:
 - a collective's tensor copies run with the caller's autograd and inference modes, whichever thread
   runs them (before: a strided leaf under no_grad succeeded inline and raised when queued);
 - allreduce([t1, t2]) reduces across the list as Gloo does; a group dropped while a Python callback
   is pending does not hang;
 - after a TimeoutError the call's tensors are kept alive (MPI may still write them), and only then.
"""

import datetime
import gc
import threading
import time
import weakref

import numpy as np
import pytest
import torch
import torch.distributed as dist

import ringsync
import ringsync.torch


def strided_leaf():
    return torch.zeros(4, 6).t().requires_grad_()  # 6 x 4, not contiguous: written through a copy


@pytest.mark.parametrize("async_op", [False, True], ids=["inline", "queued"])
def test_a_strided_leaf_under_no_grad_is_written_either_way(async_op):
    n = dist.get_world_size()
    w = strided_leaf()
    with torch.no_grad():
        work = dist.broadcast(w, src=n - 1, async_op=async_op)
        if work is not None:
            work.wait()
    assert torch.equal(w.detach(), torch.zeros(6, 4))
    outputs = [strided_leaf() for _ in range(n)]
    with torch.no_grad():
        dist.all_gather(outputs, torch.ones(6, 4), async_op=async_op)
        if async_op:
            dist.barrier()
    assert all(torch.equal(o.detach(), torch.ones(6, 4)) for o in outputs)


@pytest.mark.parametrize("async_op", [False, True], ids=["inline", "queued"])
def test_outside_no_grad_the_copy_raises_as_it_would_on_the_caller(async_op):
    """Grad mode on: torch refuses the in-place write into a view of a leaf, inline and queued alike."""
    n = dist.get_world_size()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        work = dist.broadcast(strided_leaf(), src=n - 1, async_op=async_op)
        if work is not None:
            work.wait()


def test_inference_tensors_under_inference_mode_queued():
    n, rank = dist.get_world_size(), dist.get_rank()
    with torch.inference_mode():
        x = torch.full((4, 6), float(rank)).t()  # an inference tensor, strided
        dist.all_reduce(x, async_op=True).wait()
    assert torch.equal(x, torch.full((6, 4), n * (n - 1) / 2))


@pytest.mark.parametrize("op", ["SUM", "MAX", "MIN", "PRODUCT"])
def test_allreduce_of_a_list_reduces_across_it_as_gloo(gloo, op):
    rank = dist.get_rank()
    results = {}
    for name, group in [("ringsync", dist.group.WORLD), ("gloo", gloo)]:
        tensors = [torch.full((5,), float(rank + 1)), torch.full((5,), float(10 * (rank + 1))),
                   torch.full((5,), float(-rank))]
        options = dist.AllreduceOptions()
        options.reduceOp = getattr(dist.ReduceOp, op)
        group.allreduce(tensors, options).wait()
        results[name] = tensors
    for mine, theirs in zip(results["ringsync"], results["gloo"]):
        assert torch.equal(mine, theirs), f"{op}: ringsync {mine.tolist()} gloo {theirs.tolist()}"
    assert torch.equal(results["ringsync"][0], results["ringsync"][2])


def test_allreduce_of_a_list_average_and_integers():
    n, rank = dist.get_world_size(), dist.get_rank()
    tensors = [torch.full((3,), 2 * rank + 1, dtype=torch.int64), torch.full((3,), 4, dtype=torch.int64)]
    options = dist.AllreduceOptions()
    options.reduceOp = dist.ReduceOp.AVG
    dist.group.WORLD.allreduce(tensors, options).wait()
    total = sum(2 * r + 1 + 4 for r in range(n))
    for t in tensors:
        assert torch.equal(t, torch.full((3,), total // (2 * n), dtype=torch.int64))


def test_allreduce_of_a_list_of_unlike_tensors_is_refused():
    with pytest.raises(ringsync.InvalidArgument, match="reduces across it as well"):
        dist.group.WORLD.allreduce([torch.ones(3), torch.ones(4)]).wait()


def test_dropping_a_group_while_a_python_callback_is_pending_does_not_hang():
    """The last reference to a backend goes while a collective with a Python callback is still queued:
    the join waits for the callback, which needs the GIL this thread held."""
    rank = dist.get_rank()
    world = ringsync.Communicator()
    backend = ringsync.torch.ProcessGroupRingsync(rank, dist.get_world_size(), ringsync.Options.from_environment())
    world.barrier()
    if rank != 0:
        time.sleep(0.3)  # rank 0's collective is still pending when it drops the backend
    seen = threading.Event()
    backend.allreduce([torch.ones(4)]).get_future().then(lambda f: seen.set())
    del backend
    gc.collect()
    assert seen.wait(20.0), "the callback never ran"
    world.barrier()


def numpy_backed(count):
    """A tensor over a numpy array, and a weak reference that dies with the tensor's memory."""
    array = np.zeros(count, dtype=np.float32)
    alive = weakref.ref(array)
    return torch.from_numpy(array), alive


def released(alive, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gc.collect()
        if alive() is None:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.parametrize("call", ["all_reduce", "gather", "recv"])
def test_after_a_timeout_the_calls_memory_stays_alive(call):
    """rank 0 never makes the call; its peers time out, drop every reference to their tensor, and
    the memory stays (a late message may still land in it). A call that succeeds frees it."""
    n, rank = dist.get_world_size(), dist.get_rank()
    short = dist.new_group(backend="ringsync", timeout=datetime.timedelta(seconds=1))
    world = ringsync.Communicator()
    if rank != 0:
        x, alive = numpy_backed(1 << 16)
        start = {
            "all_reduce": lambda: dist.all_reduce(x, group=short, async_op=True),
            "gather": lambda: dist.gather(x, [torch.empty(1 << 16) for _ in range(n)] if rank == 1 else None,
                                          dst=1, group=short, async_op=True),
            "recv": lambda: dist.irecv(x, 0, group=short),
        }[call]
        work = start()
        with pytest.raises(ringsync.TimeoutError):
            work.wait()
        del x, work
        # A receive MPI could cancel frees its memory; anything else stays for good.
        if call != "recv":
            assert not released(alive, 1.0), "the tensor's memory was freed while MPI may still write it"
    world.barrier()
    dist.destroy_process_group(short)
    y, alive = numpy_backed(1 << 16)
    dist.all_reduce(y)
    del y
    assert released(alive), "a tensor of a call that succeeded was kept"
