"""torch.distributed.all_reduce on "ringsync": every dtype x every op, exact closed forms, in place."""

import numpy as np
import pytest
import torch
import torch.distributed as dist

from closed_form import expected, inputs, interesting_counts
import ringsync
from torch_dtypes import DTYPES, OPS, ids, to_numpy, to_torch


def counts(itemsize):
    n = dist.get_world_size()
    # The group's communicator has the default options (the test passes none).
    return interesting_counts(n, ringsync.Options().ring_segment_bytes, itemsize)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_every_dtype_and_op_is_exact_and_in_place(dtypes, op):
    dtype, np_dtype = dtypes
    n, rank = dist.get_world_size(), dist.get_rank()
    for count in counts(torch.empty(0, dtype=dtype).element_size()):
        x = to_torch(inputs(op, np_dtype, rank, n, count), dtype)
        address = x.data_ptr()
        dist.all_reduce(x, op=getattr(dist.ReduceOp, OPS[op]))
        assert x.data_ptr() == address and x.dtype == dtype and x.shape == (count,)
        np.testing.assert_array_equal(to_numpy(x, np_dtype), expected(op, np_dtype, n, count),
                                      err_msg=f"{op} count={count}")


@pytest.mark.parametrize("dtypes", DTYPES, ids=ids)
def test_a_contiguous_view_is_reduced_in_its_base_memory(dtypes):
    """Zero copy: a contiguous tensor (here a slice of a larger one) is reduced where it lives."""
    dtype = dtypes[0]
    n, rank = dist.get_world_size(), dist.get_rank()
    base = torch.full((9,), 3, dtype=dtype)
    view = base[2:7]
    view.fill_(rank + 1)
    dist.all_reduce(view, op=dist.ReduceOp.MAX)
    assert torch.equal(base[2:7], torch.full((5,), n, dtype=dtype))
    assert torch.equal(base[:2], torch.full((2,), 3, dtype=dtype)) and torch.equal(base[7:], torch.full((2,), 3, dtype=dtype))


def test_bool_sum_and_max_are_or_prod_and_min_are_and():
    n, rank = dist.get_world_size(), dist.get_rank()
    i = torch.arange(12)
    mine = (i % n) == rank  # each element true on exactly one rank
    everyone = i >= 0
    for op, value, want in [("SUM", mine, torch.ones(12, dtype=torch.bool)),
                            ("MAX", mine, torch.ones(12, dtype=torch.bool)),
                            ("PRODUCT", mine, torch.zeros(12, dtype=torch.bool)),
                            ("MIN", mine, torch.zeros(12, dtype=torch.bool)),
                            ("PRODUCT", everyone, everyone)]:
        x = value.clone()
        dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
        assert x.dtype == torch.bool and torch.equal(x, want), op


def test_complex_sum_and_avg_reduce_real_and_imaginary_parts():
    n, rank = dist.get_world_size(), dist.get_rank()
    i = torch.arange(10, dtype=torch.float64)
    x = torch.complex(i + rank, -i * (rank + 1))
    dist.all_reduce(x)
    assert torch.equal(x, torch.complex(n * i + n * (n - 1) / 2, -i * n * (n + 1) / 2))


def test_average_of_integers_truncates_toward_zero():
    n, rank = dist.get_world_size(), dist.get_rank()
    x = torch.tensor([1 if rank == 0 else 0, -1 if rank == 0 else 0], dtype=torch.int32)
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    assert x.tolist() == [int(1 / n), int(-1 / n)]


def test_non_contiguous_tensors_are_reduced_through_a_copy_and_nothing_around_them_changes():
    n, rank = dist.get_world_size(), dist.get_rank()
    base = torch.full((6, 8), -7.0)
    view = base[:, ::2].t()  # strided and transposed: 4 x 6
    assert not view.is_contiguous()
    view.copy_(torch.arange(24, dtype=torch.float32).reshape(4, 6) + rank)
    dist.all_reduce(view)
    assert torch.equal(view, n * torch.arange(24, dtype=torch.float32).reshape(4, 6) + n * (n - 1) / 2)
    assert (base[:, 1::2] == -7).all()


def test_zero_dimensional_and_multidimensional_tensors_keep_their_shape():
    n, rank = dist.get_world_size(), dist.get_rank()
    scalar = torch.tensor(rank + 1.0)
    cube = torch.full((2, 3, 4), float(rank))
    dist.all_reduce(scalar)
    dist.all_reduce(cube, op=dist.ReduceOp.MAX)
    assert scalar.shape == () and scalar.item() == n * (n + 1) / 2
    assert cube.shape == (2, 3, 4) and (cube == n - 1).all()


def test_a_tensor_that_requires_grad_is_reduced_in_place():
    n = dist.get_world_size()
    w = torch.ones(4, requires_grad=True)
    with torch.no_grad():
        dist.all_reduce(w)
    assert torch.equal(w.detach(), torch.full((4,), float(n)))


def test_coalesced_allreduce_reduces_every_tensor():
    if not hasattr(dist, "all_reduce_coalesced"):
        pytest.skip("SKIPPED: this torch has no all_reduce_coalesced")
    n, rank = dist.get_world_size(), dist.get_rank()
    tensors = [torch.full((3,), float(rank)), torch.full((5,), float(rank))]
    dist.all_reduce_coalesced(tensors)
    assert all((t == n * (n - 1) / 2).all() for t in tensors)
