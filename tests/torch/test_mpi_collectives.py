"""gather, scatter, reduce, all_to_all and all_to_all_single on "ringsync" against closed forms (and
against Gloo for all_to_all with uneven splits); ranks that disagree raise MismatchError naming
the calls, after which the group still works."""

import numpy as np
import pytest
import torch
import torch.distributed as dist

import ringsync
from closed_form import expected, inputs
from torch_dtypes import DTYPES, OPS, ids, to_numpy, to_torch

COUNTS = [0, 1, 2, 3, 4, 1021, 70001]  # 0, 1, n-1, n, n+1, a prime, several ring segments


def values(rank, count, dtype=torch.float32):
    """rank r's data: r * 1000 + i % 7 (exact in float32 and every integer dtype used)."""
    return (torch.arange(count) % 7 + rank * 1000).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.int16, torch.bool, torch.complex64])
def test_gather_to_every_root(dtype):
    """Any dtype: gather moves bytes (int16 and bool too, which ringsync cannot reduce)."""
    n, rank = dist.get_world_size(), dist.get_rank()
    for root in range(n):
        for count in COUNTS:
            mine = values(rank, count, dtype)
            outputs = [torch.full((count,), 7, dtype=dtype) for _ in range(n)] if rank == root else None
            dist.gather(mine, outputs, dst=root)
            if rank == root:
                for r in range(n):
                    assert torch.equal(outputs[r], values(r, count, dtype)), f"root={root} r={r} count={count}"


def test_gather_into_strided_outputs():
    n, rank = dist.get_world_size(), dist.get_rank()
    outputs = [torch.zeros(5, 2).t() for _ in range(n)] if rank == 0 else None  # 2 x 5, not contiguous
    dist.gather(torch.full((2, 5), float(rank)), outputs, dst=0)
    if rank == 0:
        for r in range(n):
            assert torch.equal(outputs[r], torch.full((2, 5), float(r)))


def test_scatter_from_every_root():
    n, rank = dist.get_world_size(), dist.get_rank()
    for root in range(n):
        for count in COUNTS:
            chunks = [values(r + 10 * root, count) for r in range(n)] if rank == root else None
            out = torch.full((count,), -1.0)
            dist.scatter(out, chunks, src=root)
            assert torch.equal(out, values(rank + 10 * root, count)), f"root={root} count={count}"


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_reduce_to_a_root_leaves_the_others_alone(dtypes, op):
    dtype, np_dtype = dtypes
    n, rank = dist.get_world_size(), dist.get_rank()
    root = n - 1
    for count in [0, 1, 5, 1021]:
        x = to_torch(inputs(op, np_dtype, rank, n, count), dtype)
        before = x.clone()
        dist.reduce(x, dst=root, op=getattr(dist.ReduceOp, OPS[op]))
        if rank == root:
            np.testing.assert_array_equal(to_numpy(x, np_dtype), expected(op, np_dtype, n, count), err_msg=f"{op} {count}")
        else:
            assert torch.equal(x, before), "reduce wrote a tensor on a rank that is not the root"


def test_all_to_all_single_equal_splits():
    n, rank = dist.get_world_size(), dist.get_rank()
    for rows in [0, 1, 3]:
        send = torch.stack([torch.full((rows, 4), float(100 * rank + peer)) for peer in range(n)]).reshape(n * rows, 4)
        recv = torch.full((n * rows, 4), -1.0)
        dist.all_to_all_single(recv, send)
        want = torch.stack([torch.full((rows, 4), float(100 * peer + rank)) for peer in range(n)]).reshape(n * rows, 4)
        assert torch.equal(recv, want), f"rows={rows}"


def test_all_to_all_single_uneven_splits_as_gloo(gloo):
    """Rank r sends r + p + 1 rows to rank p (none to itself when r == p == 0... every pair differs)."""
    n, rank = dist.get_world_size(), dist.get_rank()
    in_splits = [rank + peer + 1 for peer in range(n)]
    out_splits = [peer + rank + 1 for peer in range(n)]
    send = torch.cat([torch.arange(s * 3, dtype=torch.float64).reshape(s, 3) + 1000 * rank + 100 * p
                      for p, s in enumerate(in_splits)])
    got = {}
    for name, group in [("ringsync", None), ("gloo", gloo)]:
        recv = torch.full((sum(out_splits), 3), -1.0, dtype=torch.float64)
        dist.all_to_all_single(recv, send, out_splits, in_splits, group=group)
        got[name] = recv
    want = torch.cat([torch.arange(s * 3, dtype=torch.float64).reshape(s, 3) + 1000 * p + 100 * rank
                      for p, s in enumerate(out_splits)])
    assert torch.equal(got["ringsync"], want)
    assert torch.equal(got["ringsync"], got["gloo"])


def test_all_to_all_list():
    n, rank = dist.get_world_size(), dist.get_rank()
    sends = [torch.full((peer + 1, 2), float(10 * rank + peer)) for peer in range(n)]
    recvs = [torch.empty(rank + 1, 2) for _ in range(n)]
    dist.all_to_all(recvs, sends)
    for peer in range(n):
        assert torch.equal(recvs[peer], torch.full((rank + 1, 2), float(10 * peer + rank)))


def test_async_mpi_collectives_complete_in_order_with_ringsyncs():
    n, rank = dist.get_world_size(), dist.get_rank()
    x = torch.full((1000,), float(rank))
    outputs = [torch.empty(3) for _ in range(n)] if rank == 0 else None
    works = [dist.all_reduce(x, async_op=True), dist.gather(torch.full((3,), float(rank)), outputs, dst=0, async_op=True),
             dist.all_reduce(x, async_op=True)]
    for w in works:
        w.wait()
    assert torch.equal(x, torch.full((1000,), float(n * n * (n - 1) / 2)))
    if rank == 0:
        assert [o[0].item() for o in outputs] == [float(r) for r in range(n)]


def test_ranks_naming_different_roots_raise_mismatch_and_the_group_goes_on():
    n, rank = dist.get_world_size(), dist.get_rank()
    with pytest.raises(ringsync.MismatchError, match=r"GATHER.*root 0.*root 1|GATHER.*root 1.*root 0"):
        root = 0 if rank == 0 else 1
        dist.gather(torch.ones(2), [torch.empty(2) for _ in range(n)] if rank == root else None, dst=root)
    with pytest.raises(ringsync.MismatchError, match="REDUCE"):
        dist.reduce(torch.ones(2), dst=0 if rank == 0 else 1)
    x = torch.ones(3)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((3,), float(n)))


def test_different_kinds_or_sizes_raise_mismatch():
    n, rank = dist.get_world_size(), dist.get_rank()
    with pytest.raises(ringsync.MismatchError, match=r"rank [1-9] sends 5 elements to rank 0, which expects 4"):
        out = torch.empty(n * (4 if rank == 0 else 5))
        dist.all_to_all_single(out, torch.ones(n * (4 if rank == 0 else 5)))
    with pytest.raises(ringsync.MismatchError, match="SCATTER|GATHER"):
        if rank == 0:
            dist.gather(torch.ones(2), [torch.empty(2) for _ in range(n)], dst=0)
        else:
            dist.scatter(torch.empty(2), None, src=0)


def test_all_to_all_splits_that_disagree_raise_mismatch_naming_the_ranks():
    n, rank = dist.get_world_size(), dist.get_rank()
    in_splits = [1] * n
    out_splits = [1] * n
    if rank == 1:
        out_splits[0] = 2  # rank 1 expects 2 rows from rank 0, which sends 1
    with pytest.raises(ringsync.MismatchError, match="rank 0 sends 1 elements to rank 1, which expects 2"):
        dist.all_to_all_single(torch.empty(sum(out_splits)), torch.ones(sum(in_splits)), out_splits, in_splits)
    x = torch.ones(2)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((2,), float(n)))


def test_bad_arguments_raise_at_the_call():
    n, rank = dist.get_world_size(), dist.get_rank()
    with pytest.raises(ValueError, match="split|rows"):  # torch's own check or ringsync's
        dist.all_to_all_single(torch.empty(n + 1), torch.ones(n + 1))
    if rank == 0:
        with pytest.raises(ringsync.InvalidArgument, match="gather output 1 is torch.float32 x 3, expected torch.float32 x 2"):
            dist.gather(torch.ones(2), [torch.empty(2), torch.empty(3)] + [torch.empty(2)] * (n - 2), dst=0)
