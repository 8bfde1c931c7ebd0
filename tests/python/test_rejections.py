"""Unusable arrays and arguments raise InvalidArgument before anything is sent: the array is
untouched, no call was counted, and the communicator keeps working. Every rank rejects the same
thing, so nobody is left waiting."""

import numpy as np
import pytest

import ringsync


def read_only(x):
    x.flags.writeable = False
    return x


def two_d():
    return np.arange(12, dtype=np.float32).reshape(3, 4)


# (label, make the argument, words the message must contain)
BAD_ARRAYS = [
    ("read-only numpy", lambda: read_only(np.arange(8, dtype=np.float32)), ["read-only"]),
    ("bytes", lambda: b"abcd", ["read-only"]),
    ("strided slice", lambda: np.arange(16, dtype=np.float32)[::2], ["not C-contiguous", "strides=(2)"]),
    ("reversed", lambda: np.arange(8, dtype=np.float64)[::-1], ["not C-contiguous", "strides=(-1)"]),
    ("column slice", lambda: two_d()[:, 1:3], ["not C-contiguous", "shape=(3, 2)"]),
    ("Fortran order", lambda: np.asfortranarray(two_d()), ["not C-contiguous"]),
    ("transpose", lambda: two_d().T, ["not C-contiguous"]),
    ("int16", lambda: np.zeros(4, np.int16), ["int16", "widen to int32"]),
    ("uint16", lambda: np.zeros(4, np.uint16), ["uint16", "widen to int32"]),
    ("bool", lambda: np.zeros(4, bool), ["bool", "uint8"]),
    ("complex64", lambda: np.zeros(4, np.complex64), ["complex64", "real view"]),
    ("complex128", lambda: np.zeros(4, np.complex128), ["complex128"]),
    ("longdouble", lambda: np.zeros(4, np.longdouble), ["float128", "supported"]),
    ("big-endian", lambda: np.zeros(4, ">f4"), [">f4", "native byte order"]),
    ("datetime", lambda: np.zeros(4, "datetime64[s]"), ["datetime64[s]"]),
    ("object dtype", lambda: np.array([1, "a"], dtype=object), ["object"]),
    ("list", lambda: [1.0, 2.0], ["writable array", "list"]),
    ("None", lambda: None, ["writable array", "NoneType"]),
    ("int", lambda: 3, ["writable array", "int"]),
]


def assert_rejected_cleanly(comm, call, *words):
    before = comm.call_count
    with pytest.raises(ringsync.InvalidArgument) as info:
        call()
    message = str(info.value)
    for word in words:
        assert word in message, f"{word!r} not in {message!r}"
    assert comm.call_count == before, "a rejected call must not reach the wire"
    return message


@pytest.mark.parametrize("label,make,words", BAD_ARRAYS, ids=[b[0] for b in BAD_ARRAYS])
def test_unusable_arrays_are_rejected_before_anything_is_sent(comm, label, make, words):
    x = make()
    snapshot = np.array(x, copy=True) if isinstance(x, np.ndarray) else None
    assert_rejected_cleanly(comm, lambda: comm.allreduce(x, op="sum"), "allreduce: x", *words)
    assert_rejected_cleanly(comm, lambda: comm.broadcast(x, root=0), "broadcast: x", *words)
    if snapshot is not None:
        np.testing.assert_array_equal(x, snapshot)
    probe = np.ones(2, dtype=np.int32)
    comm.allreduce(probe)  # still in step with every peer
    assert (probe == comm.size).all()


def test_bad_op(comm):
    x = np.ones(4, dtype=np.float32)
    for op in ("mean", "SUM", ""):
        assert_rejected_cleanly(comm, lambda: comm.allreduce(x, op=op), f"op='{op}'", "sum, prod, min, max, avg")
    assert (x == 1).all()


def test_root_out_of_range(comm):
    x = np.ones(4, dtype=np.float32)
    for root in (-1, comm.size):
        assert_rejected_cleanly(comm, lambda: comm.broadcast(x, root=root), f"root={root}", "out of range")


def test_allgather_output_of_the_wrong_size_or_type(comm):
    x = np.ones(4, dtype=np.float32)
    n = comm.size
    bad_outputs = [np.zeros(4 * n + 1, np.float32), np.zeros(4 * n, np.float64), np.zeros(4, np.float32)]
    for out in bad_outputs:
        assert_rejected_cleanly(comm, lambda: comm.allgather(x, out), "allgather: out must hold", str(4 * n))


def test_reduce_scatter_arrays_of_the_wrong_size_or_type(comm):
    n = comm.size
    out = np.zeros(4, np.float32)
    bad_inputs = [np.ones(4 * n + 1, np.float32), np.ones(4 * n, np.float64), np.ones(4, np.float32) if n > 1 else np.ones(5, np.float32)]
    for x in bad_inputs:
        assert_rejected_cleanly(comm, lambda: comm.reduce_scatter(x, out), "reduce_scatter: x must hold", str(4 * n))
    x = np.ones(4 * n, np.float32)
    assert_rejected_cleanly(comm, lambda: comm.reduce_scatter(x, out, op="mean"), "op='mean'")


def test_unsupported_ml_dtypes_type(comm):
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    x = np.zeros(4, dtype=ml_dtypes.float8_e4m3fn)
    assert_rejected_cleanly(comm, lambda: comm.allreduce(x), "float8_e4m3fn")


def test_tensor_that_requires_grad(comm):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    t = torch.ones(4, requires_grad=True)
    assert_rejected_cleanly(comm, lambda: comm.allreduce(t), "detach()")


def test_a_cuda_stream_is_ignored_for_host_arrays(comm):
    x = np.ones(3, dtype=np.float64)
    comm.allreduce(x, op="sum", stream=12345)
    assert (x == comm.size).all()


def test_bad_option_values(comm):
    options = ringsync.Options()
    for field, value in (("backend", "gpu"), ("algorithm", "tree"), ("log_level", "loud")):
        with pytest.raises(ringsync.InvalidArgument, match=f"Options.{field}='{value}'"):
            setattr(options, field, value)
    options.ring_depth = 1
    with pytest.raises(ringsync.InvalidArgument, match="ringDepth|ring_depth|RING_DEPTH"):
        options.validate()


def test_comm_that_is_not_an_mpi4py_communicator():
    with pytest.raises(ringsync.InvalidArgument, match="mpi4py communicator, got str"):
        ringsync.Communicator("MPI_COMM_WORLD")
