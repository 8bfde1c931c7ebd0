"""GradientAverager over a list of arrays: fused buckets, exact averages, every rank identical."""

import gc

import numpy as np
import pytest

import ringsync

# Sizes around the bucket limits used below (first bucket 4 KiB, then 64 KiB): a gradient larger
# than a bucket, several that share one, a zero-size one, three dtypes.
SHAPES = [(3000, 7), (5,), (0,), (1000,), (16, 16), (17000,), (1,), (333,)]
DTYPES = [np.float32, np.float64, np.float32, np.float16, np.float32, np.float32, np.float64, np.float32]


def make_gradients():
    return [np.zeros(shape, dtype=dtype) for shape, dtype in zip(SHAPES, DTYPES)]


def fill(gradients, rank, n, step):
    """g = base + 2r - (n-1): the offsets cancel, so the mean is `base`, exactly, in every dtype."""
    for k, g in enumerate(gradients):
        base = (np.arange(g.size) % 11 + k + step).reshape(g.shape)
        g[...] = base + 2 * rank - (n - 1)


def expected_mean(gradients, step):
    return [(np.arange(g.size) % 11 + k + step).reshape(g.shape).astype(g.dtype) for k, g in enumerate(gradients)]


def averager(comm, gradients, **kwargs):
    return ringsync.GradientAverager(comm, gradients, bucket_bytes=64 * 1024, first_bucket_bytes=4096, **kwargs)


@pytest.mark.parametrize("overlap", [True, False])
def test_backward_order_steps_give_the_exact_mean(comm, overlap):
    gradients = make_gradients()
    a = averager(comm, gradients, overlap=overlap)
    assert a.gradient_count == len(SHAPES) and a.overlapping == overlap
    assert a.bucket_count >= 3 and a.stats()["buckets"] == a.bucket_count
    assignment = a.bucket_assignment()
    assert len(assignment) == len(SHAPES) and set(assignment) == set(range(a.bucket_count)), assignment
    for step in range(3):
        fill(gradients, comm.rank, comm.size, step)
        for i in reversed(range(len(gradients))):  # as backward produces them
            a.mark_ready(i)
        a.synchronize()
        for k, (g, want) in enumerate(zip(gradients, expected_mean(gradients, step))):
            np.testing.assert_array_equal(g, want, err_msg=f"step {step} gradient {k}")
    assert a.stats()["steps"] == 3


def test_average_all_and_sum(comm):
    gradients = make_gradients()
    a = averager(comm, gradients, op="sum")
    fill(gradients, comm.rank, comm.size, 0)
    a.mark_ready(len(gradients) - 1)
    a.average_all()  # marks the rest
    for g, mean in zip(gradients, expected_mean(gradients, 0)):
        np.testing.assert_array_equal(g, (mean.astype(np.float64) * comm.size).astype(g.dtype))


def test_fp16_compression_of_float32_gradients(comm):
    gradients = [np.zeros(5000, np.float32), np.zeros(10, np.float32)]
    a = averager(comm, gradients, compress_fp16=True)
    fill(gradients, comm.rank, comm.size, 1)
    a.average_all()
    for g, want in zip(gradients, expected_mean(gradients, 1)):
        np.testing.assert_array_equal(g, want)  # small integers survive float16 exactly


def test_the_averager_keeps_its_arrays_alive(comm):
    a = averager(comm, [np.full(100, comm.rank, np.float32), np.full(7, 2.0)])
    gc.collect()  # the caller holds no reference to the arrays
    a.average_all()
    first, second = a.gradients
    assert (first == (comm.size - 1) / 2).all() and (second == 2.0).all()


def test_mark_ready_errors_are_invalid_argument(comm):
    gradients = [np.ones(10, np.float32), np.ones(3, np.float32)]
    a = averager(comm, gradients)
    for bad in (2, -1):
        with pytest.raises(ringsync.InvalidArgument, match=f"index={bad}"):
            a.mark_ready(bad)
    a.mark_ready(1)
    with pytest.raises(ringsync.InvalidArgument, match="1"):
        a.mark_ready(1)  # twice in one step
    with pytest.raises(ringsync.InvalidArgument, match="0"):
        a.synchronize()  # gradient 0 was never marked
    a.mark_ready(0)
    a.synchronize()
    assert all((g == 1).all() for g in gradients)


def test_unusable_gradients_are_rejected_before_anything_is_sent(comm):
    read_only = np.ones(4, np.float32)
    read_only.flags.writeable = False
    with pytest.raises(ringsync.InvalidArgument, match=r"gradients\[1\] is read-only"):
        averager(comm, [np.ones(4, np.float32), read_only])
    with pytest.raises(ringsync.InvalidArgument, match=r"gradients\[0\] is not C-contiguous"):
        averager(comm, [np.ones(8, np.float32)[::2]])
    with pytest.raises(ringsync.InvalidArgument, match="op=max"):
        averager(comm, [np.ones(4, np.float32)], op="max")
    with pytest.raises(TypeError):
        ringsync.GradientAverager(comm, 5)


def test_different_registrations_raise_mismatch_error_on_every_rank(comm):
    if comm.size < 2:
        pytest.skip("skipped: needs at least 2 ranks")
    gradients = [np.ones(10 + comm.rank, np.float32)]
    with pytest.raises(ringsync.MismatchError):
        a = averager(comm, gradients)
        a.average_all()
