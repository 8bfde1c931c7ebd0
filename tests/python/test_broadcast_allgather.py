"""broadcast (every dtype, every root, the interesting counts), allgather and reduce_scatter."""

import numpy as np
import pytest

import closed_form
from closed_form import interesting_counts
from conftest import NUMPY_DTYPES, OPS


def root_values(root, count, dtype):
    return ((np.arange(count) + 3 * root) % 100).astype(dtype)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_broadcast_from_every_root(comm, dtype):
    for root in range(comm.size):
        for count in interesting_counts(comm.size, comm.options.ring_segment_bytes, np.dtype(dtype).itemsize):
            if comm.rank == root:
                x = root_values(root, count, dtype)
            else:
                x = np.full(count, 111, dtype=dtype)
            comm.broadcast(x, root=root)
            np.testing.assert_array_equal(x, root_values(root, count, dtype), err_msg=f"root={root} count={count}")


def test_broadcast_root_defaults_to_zero(comm):
    x = np.full(4, comm.rank, dtype=np.int64)
    comm.broadcast(x)
    assert (x == 0).all()


@pytest.mark.parametrize("count", [0, 1, 5, 4096])
def test_allgather_concatenates_in_rank_order(comm, count):
    n = comm.size
    x = (comm.rank * 10 + np.arange(count) % 5).astype(np.float32)
    out = np.full(n * count, -1, dtype=np.float32)
    comm.allgather(x, out)
    want = np.concatenate([r * 10 + np.arange(count) % 5 for r in range(n)]).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_allgather_in_place_from_the_own_block(comm):
    n, count = comm.size, 6
    out = np.full(n * count, -1, dtype=np.int32)
    out[comm.rank * count:(comm.rank + 1) * count] = comm.rank + 1
    comm.allgather(out[comm.rank * count:(comm.rank + 1) * count], out)
    np.testing.assert_array_equal(out, np.repeat(np.arange(1, n + 1, dtype=np.int32), count))


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", OPS)
def test_reduce_scatter_gives_each_rank_its_block(comm, dtype, op):
    n = comm.size
    for count in (0, 1, n + 1, 1021, 300007):
        x = closed_form.inputs(op, dtype, comm.rank, n, n * count)
        out = np.full(count, 77, dtype=dtype)
        comm.reduce_scatter(x, out, op=op)
        want = closed_form.expected(op, dtype, n, n * count)[comm.rank * count:(comm.rank + 1) * count]
        np.testing.assert_array_equal(out, want, err_msg=f"count={count}")
        # In place: out is this rank's block of x.
        x = closed_form.inputs(op, dtype, comm.rank, n, n * count)
        comm.reduce_scatter(x, x[comm.rank * count:(comm.rank + 1) * count], op=op)
        np.testing.assert_array_equal(x[comm.rank * count:(comm.rank + 1) * count], want, err_msg=f"in place, count={count}")
