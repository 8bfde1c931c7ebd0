"""The DLPack path with a producer that is not numpy (dlpack_producer.py): host memory is reduced
in place, bfloat16 works without ml_dtypes, and devices/dtypes ringsync cannot take are rejected."""

import numpy as np
import pytest

import ringsync
from closed_form import expected, inputs
from dlpack_producer import BFLOAT, FLOAT, INT, KDL_CUDA, KDL_OPENCL, Producer, bfloat16_bits


def test_a_dlpack_only_producer_is_reduced_in_place(comm):
    memory = inputs("sum", np.int32, comm.rank, comm.size, 1021)
    producer = Producer(memory, (1021,), INT, 32)
    assert not hasattr(producer, "__buffer__")
    comm.allreduce(producer, op="sum")
    np.testing.assert_array_equal(memory, expected("sum", np.int32, comm.size, 1021))


def test_bfloat16_through_dlpack(comm):
    for op in ("sum", "prod", "min", "max", "avg"):
        memory = bfloat16_bits(inputs(op, np.float32, comm.rank, comm.size, 333))
        comm.allreduce(Producer(memory, (333,), BFLOAT, 16), op=op)
        np.testing.assert_array_equal(memory, bfloat16_bits(expected(op, np.float32, comm.size, 333)), err_msg=op)


def test_explicit_c_strides_are_accepted_and_others_rejected(comm):
    memory = np.full(12, comm.rank + 1.0, dtype=np.float32)
    comm.allreduce(Producer(memory, (3, 4), FLOAT, 32, strides=(4, 1)))
    assert (memory == comm.size * (comm.size + 1) / 2).all()
    before = comm.call_count
    with pytest.raises(ringsync.InvalidArgument, match=r"not C-contiguous \(shape=\(3, 2\), strides=\(4, 2\)"):
        comm.allreduce(Producer(memory, (3, 2), FLOAT, 32, strides=(4, 2)))
    assert comm.call_count == before


@pytest.mark.parametrize("kwargs,words", [
    ({"code": FLOAT, "bits": 32, "lanes": 2}, "float32x2"),
    ({"code": FLOAT, "bits": 32, "device": KDL_OPENCL}, "DLPack device type 4"),
    ({"code": BFLOAT, "bits": 32}, "bfloat32"),
])
def test_devices_and_dtypes_ringsync_cannot_take(comm, kwargs, words):
    memory = np.zeros(8, dtype=np.float32)
    before = comm.call_count
    with pytest.raises(ringsync.InvalidArgument, match=words):
        comm.allreduce(Producer(memory, (4,), **kwargs))
    assert comm.call_count == before


def test_a_cuda_tensor(comm):
    memory = np.zeros(4, dtype=np.float32)
    cuda_tensor = Producer(memory, (4,), FLOAT, 32, device=KDL_CUDA)
    before = comm.call_count
    if ringsync.with_cuda:
        with pytest.raises(ringsync.InvalidArgument, match="needs stream="):
            comm.allreduce(cuda_tensor)
        with pytest.raises(ringsync.InvalidArgument, match="stream='default'"):
            comm.allreduce(cuda_tensor, stream="default")
    else:
        with pytest.raises(ringsync.InvalidArgument, match="built without CUDA"):
            comm.allreduce(cuda_tensor, stream=0)
    assert comm.call_count == before
