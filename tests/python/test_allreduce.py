"""allreduce: every numpy dtype x every op x the interesting counts, in place, exact results."""

import array

import numpy as np
import pytest

from closed_form import expected, inputs, interesting_counts
from conftest import NUMPY_DTYPES, OPS


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_dtype_and_op_is_exact_and_in_place(comm, dtype, op):
    n = comm.size
    for count in interesting_counts(n, comm.options.ring_segment_bytes, np.dtype(dtype).itemsize):
        x = inputs(op, dtype, comm.rank, n, count)
        address = x.ctypes.data
        comm.allreduce(x, op=op)
        assert x.ctypes.data == address and x.dtype == dtype and x.shape == (count,)
        np.testing.assert_array_equal(x, expected(op, dtype, n, count), err_msg=f"{op} count={count}")


def test_sum_is_the_default_op(comm):
    x = np.ones(3, dtype=np.float32)
    comm.allreduce(x)
    np.testing.assert_array_equal(x, np.full(3, comm.size, dtype=np.float32))


def test_a_view_is_reduced_in_place_and_nothing_around_it(comm):
    buffer = np.full(100, -7, dtype=np.int32)
    view = buffer[10:90]
    view[:] = inputs("sum", np.int32, comm.rank, comm.size, 80)
    comm.allreduce(view, op="sum")
    np.testing.assert_array_equal(buffer[10:90], expected("sum", np.int32, comm.size, 80))
    assert (buffer[:10] == -7).all() and (buffer[90:] == -7).all()


def test_multidimensional_arrays_keep_their_shape(comm):
    x = inputs("max", np.float32, comm.rank, comm.size, 3 * 4 * 5).reshape(3, 4, 5)
    comm.allreduce(x, op="max")
    assert x.shape == (3, 4, 5)
    np.testing.assert_array_equal(x.ravel(), expected("max", np.float32, comm.size, 60))


def test_zero_dimensional_array_is_one_element(comm):
    x = np.array(comm.rank + 1.0)
    comm.allreduce(x, op="sum")
    assert x.shape == () and x == comm.size * (comm.size + 1) / 2


@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(0,), (0, 3), (4, 0)])
def test_zero_size_arrays_are_a_collective_that_moves_nothing(comm, dtype, shape):
    x = np.empty(shape, dtype=dtype)
    before = comm.call_count
    comm.allreduce(x, op="sum")
    comm.broadcast(x, root=comm.size - 1)
    assert x.shape == shape and comm.call_count == before + 2


def test_integer_avg_truncates_toward_zero(comm):
    n = comm.size
    up = np.full(5, comm.rank, dtype=np.int32)  # sum n(n-1)/2
    down = -up
    comm.allreduce(up, op="avg")
    comm.allreduce(down, op="avg")
    mean = (n * (n - 1) // 2) / n
    assert (up == int(mean)).all() and (down == -int(mean)).all()


def test_float_avg_of_uneven_values(comm):
    x = np.full(7, float(comm.rank))
    comm.allreduce(x, op="avg")
    np.testing.assert_array_equal(x, np.full(7, (comm.size - 1) / 2))


def test_buffer_protocol_objects_without_dlpack(comm):
    n = comm.size
    doubles = array.array("d", [comm.rank, 1.5, -2.0])
    comm.allreduce(doubles, op="sum")
    assert list(doubles) == [n * (n - 1) / 2, 1.5 * n, -2.0 * n]
    raw = bytearray([comm.rank, 200, 7])
    comm.allreduce(raw, op="max")
    assert list(raw) == [n - 1, 200, 7]
    ints = np.array([comm.rank + 1, 2], dtype=np.int64)
    comm.allreduce(memoryview(ints), op="prod")
    assert list(ints) == [int(np.prod(np.arange(1, n + 1))), 2**n]


def test_bfloat16_through_ml_dtypes(comm):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed: numpy has no bfloat16")
    n = comm.size
    for op in OPS:
        count = 1021
        x = inputs(op, np.float32, comm.rank, n, count).astype(ml_dtypes.bfloat16)
        comm.allreduce(x, op=op)
        assert x.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(x.astype(np.float32), expected(op, np.float32, n, count), err_msg=op)


def test_torch_cpu_tensors(comm):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    n = comm.size
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.uint8):
        t = torch.full((4, 3), comm.rank + 1, dtype=dtype)
        comm.allreduce(t, op="sum")
        assert (t == n * (n + 1) // 2).all(), dtype


def test_cuda_tensors_with_a_stream(comm):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import ringsync

    if not ringsync.with_cuda or not torch.cuda.is_available():
        pytest.skip("skipped: needs a CUDA build of ringsync and a GPU (with_cuda=%s)" % ringsync.with_cuda)
    torch.cuda.set_device(comm.local_rank % torch.cuda.device_count())
    t = torch.full((1000,), comm.rank + 1.0, device="cuda")
    stream = torch.cuda.current_stream()
    comm.allreduce(t, op="sum", stream=stream)
    stream.synchronize()
    assert (t == comm.size * (comm.size + 1) / 2).all()


def test_a_cuda_tensor_outlives_its_collective(comm):
    """Dropping the last reference right after a stream-ordered call must not free the memory the
    collective still uses (torch's caching allocator would hand it to the next tensor): ringsync
    keeps it until the stream has passed the call, and lets it go at a later call."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    import numpy as np
    import ringsync

    if not ringsync.with_cuda or not torch.cuda.is_available():
        pytest.skip("skipped: needs a CUDA build of ringsync and a GPU (with_cuda=%s)" % ringsync.with_cuda)
    torch.cuda.set_device(comm.local_rank % torch.cuda.device_count())
    stream = torch.cuda.current_stream()
    stream.synchronize()
    comm.allreduce(np.ones(1, dtype=np.float32))  # releases anything kept by earlier tests
    before = torch.cuda.memory_allocated()
    t = torch.full((1 << 20,), 1.0, device="cuda")
    comm.allreduce(t, op="sum", stream=stream)
    del t
    assert torch.cuda.memory_allocated() >= before + (4 << 20)  # still held for the collective
    stream.synchronize()
    comm.allreduce(np.ones(1, dtype=np.float32))  # a later call lets it go
    assert torch.cuda.memory_allocated() == before
