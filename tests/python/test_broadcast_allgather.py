"""broadcast (every dtype, every root, the interesting counts) and allgather."""

import numpy as np
import pytest

from closed_form import interesting_counts
from conftest import NUMPY_DTYPES


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
