"""broadcast, all_gather (+ into_tensor), reduce_scatter (+ _tensor), barrier on "ringsync": every
dtype (and op, for reduce-scatter) against closed forms."""

import numpy as np
import pytest
import torch
import torch.distributed as dist

from closed_form import expected, inputs
from torch_dtypes import DTYPES, OPS, ids, to_numpy, to_torch

COUNTS = [0, 1, 2, 3, 4, 1021, 70001]  # 0, 1, n-1, n, n+1, a prime, several ring segments


def values(np_dtype, rank, count):
    """rank r's input: r + i % 7 (exact in every dtype)."""
    return (np.arange(count) % 7 + rank).astype(np_dtype)


@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_broadcast_from_every_root(dtypes):
    dtype, np_dtype = dtypes
    n, rank = dist.get_world_size(), dist.get_rank()
    for root in range(n):
        for count in COUNTS:
            x = to_torch(values(np_dtype, rank, count), dtype)
            dist.broadcast(x, src=root)
            np.testing.assert_array_equal(to_numpy(x, np_dtype), values(np_dtype, root, count),
                                          err_msg=f"root={root} count={count}")


@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_all_gather_list_and_into_tensor(dtypes):
    dtype, np_dtype = dtypes
    n, rank = dist.get_world_size(), dist.get_rank()
    for count in COUNTS:
        x = to_torch(values(np_dtype, rank, count), dtype)
        outputs = [torch.full((count,), 99, dtype=dtype) for _ in range(n)]
        dist.all_gather(outputs, x)
        block = torch.empty(n * count, dtype=dtype)
        dist.all_gather_into_tensor(block, x)
        for r in range(n):
            want = values(np_dtype, r, count)
            np.testing.assert_array_equal(to_numpy(outputs[r], np_dtype), want, err_msg=f"list r={r} count={count}")
            np.testing.assert_array_equal(to_numpy(block[r * count:(r + 1) * count], np_dtype), want,
                                          err_msg=f"tensor r={r} count={count}")


def test_all_gather_into_a_stacked_non_contiguous_output():
    n, rank = dist.get_world_size(), dist.get_rank()
    out = torch.zeros(5, n).t()  # n x 5, not contiguous
    dist.all_gather_into_tensor(out, torch.arange(5, dtype=torch.float32) + 10 * rank)
    assert torch.equal(out, torch.arange(5, dtype=torch.float32) + 10 * torch.arange(n, dtype=torch.float32)[:, None])


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_reduce_scatter_list_and_tensor(dtypes, op):
    dtype, np_dtype = dtypes
    n, rank = dist.get_world_size(), dist.get_rank()
    reduce_op = getattr(dist.ReduceOp, OPS[op])
    for count in [0, 1, 5, 1021]:
        whole = to_torch(inputs(op, np_dtype, rank, n, n * count), dtype)
        want = expected(op, np_dtype, n, n * count)[rank * count:(rank + 1) * count]
        kept = whole.clone()
        out = torch.full((count,), 99, dtype=dtype)
        dist.reduce_scatter(out, list(whole.chunk(n)) if count else [torch.empty(0, dtype=dtype)] * n, op=reduce_op)
        np.testing.assert_array_equal(to_numpy(out, np_dtype), want, err_msg=f"list {op} count={count}")
        out = torch.full((count,), 99, dtype=dtype)
        dist.reduce_scatter_tensor(out, whole, op=reduce_op)
        np.testing.assert_array_equal(to_numpy(out, np_dtype), want, err_msg=f"tensor {op} count={count}")
        assert torch.equal(whole, kept), "the input of a reduce-scatter is not written"


def test_barrier_completes_and_orders_with_collectives():
    n = dist.get_world_size()
    x = torch.ones(3)
    work = dist.all_reduce(x, async_op=True)
    dist.barrier()
    work.wait()
    assert torch.equal(x, torch.full((3,), float(n)))


def test_broadcast_into_a_non_contiguous_view_leaves_the_rest_alone():
    n, rank = dist.get_world_size(), dist.get_rank()
    base = torch.full((4, 6), -1.0)
    view = base[:, ::2]  # 4 x 3, strided
    view.copy_(torch.arange(12, dtype=torch.float32).reshape(4, 3) + 100 * rank)
    dist.broadcast(view, src=n - 1)
    assert torch.equal(view, torch.arange(12, dtype=torch.float32).reshape(4, 3) + 100 * (n - 1))
    assert (base[:, 1::2] == -1).all()
