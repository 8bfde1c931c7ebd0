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


# --- sharded (parameters=): ZeRO-1/2 --------------------------------------------------------------


def sharded(comm, gradients, parameters, **kwargs):
    return averager(comm, gradients, parameters=parameters, **kwargs)


@pytest.mark.parametrize("overlap", [True, False])
def test_sharded_steps_give_exact_shards_and_identical_parameters(comm, overlap):
    gradients = make_gradients()
    parameters = [np.full_like(g, 7 + comm.rank) for g in gradients]  # stale, different on every rank
    a = sharded(comm, gradients, parameters, overlap=overlap)
    assert a.sharded and a.overlapping == overlap and a.parameters[0] is parameters[0]
    # The shards partition every tensor, in rank order; this rank's is shard_range.
    for k, g in enumerate(gradients):
        ranges = [a.shard_of(r, k) for r in range(comm.size)]
        covered = np.zeros(g.size, np.int32)
        for begin, end in ranges:
            covered[begin:end] += 1
        assert (covered == 1).all(), (k, ranges)
        assert a.shard_range(k) == ranges[comm.rank] == a.shard_range(g) == a.shard_range(parameters[k])
    assert a.shard_elements == sum(e - b for b, e in (a.shard_range(k) for k in range(len(gradients))))
    for step in range(2):
        fill(gradients, comm.rank, comm.size, step)
        for i in reversed(range(len(gradients))):
            a.mark_ready(i)
        a.synchronize()
        for k, (g, p, want) in enumerate(zip(gradients, parameters, expected_mean(gradients, step))):
            begin, end = a.shard_range(k)
            np.testing.assert_array_equal(g.reshape(-1)[begin:end], want.reshape(-1)[begin:end], err_msg=f"shard {k}")
            p.reshape(-1)[begin:end] = g.reshape(-1)[begin:end]  # the update: this rank's shard only
            a.mark_updated(k)
        if step == 0:
            a.gather_parameters()
        else:  # tensor by tensor, as a forward pass would (every parameter is marked already)
            for k in range(len(parameters)):
                a.wait_for_parameter(k)
        for k, (p, want) in enumerate(zip(parameters, expected_mean(gradients, step))):
            np.testing.assert_array_equal(p, want, err_msg=f"step {step} parameter {k}")
    assert a.stats()["steps"] == 2 and a.stats()["wire_bytes_per_step"] >= 0


def test_sharded_errors_name_what_is_wrong(comm):
    gradients = [np.ones(10, np.float32), np.ones(3, np.float32)]
    parameters = [np.zeros(10, np.float32), np.zeros(3, np.float32)]
    a = sharded(comm, gradients, parameters)
    with pytest.raises(ringsync.InvalidArgument, match="index=2 is out of range"):
        a.shard_range(2)
    with pytest.raises(ringsync.InvalidArgument, match="is not the start of a gradient or parameter"):
        a.shard_range(np.zeros(10, np.float32))  # a tensor the averager does not hold
    with pytest.raises(ringsync.InvalidArgument, match="after synchronize"):
        a.mark_updated(0)  # no step yet
    a.average_all()
    with pytest.raises(ringsync.InvalidArgument, match="2 parameters were not marked updated"):
        a.mark_ready(0)  # the next step needs this one's parameters marked first
    for k, (g, p) in enumerate(zip(gradients, parameters)):
        begin, end = a.shard_range(k)
        p[begin:end] = g[begin:end]  # the average of ones, on this rank's shard
    a.gather_parameters()
    assert all((p == 1).all() for p in parameters)
    replicated = averager(comm, [np.ones(4, np.float32)])
    assert not replicated.sharded and replicated.parameters == []
    with pytest.raises(ringsync.InvalidArgument, match="not sharded"):
        replicated.mark_updated(0)
    with pytest.raises(ringsync.InvalidArgument, match=r"parameter 1 \(count=4 float32\) does not match gradient 1"):
        sharded(comm, gradients, [np.zeros(10, np.float32), np.zeros(4, np.float32)])


def test_sharded_parameter_lists_that_differ_between_ranks_raise_mismatch_error(comm):
    if comm.size < 2:
        pytest.skip("skipped: needs at least 2 ranks")
    n = 5 + (comm.rank == 1)  # rank 1's tensor 0 is larger, gradient and parameter alike
    gradients, parameters = [np.ones(n, np.float32)], [np.zeros(n, np.float32)]
    with pytest.raises(ringsync.MismatchError, match="tensor 0: rank 1 has count=6 float32, rank 0 has count=5"):
        sharded(comm, gradients, parameters)
    assert (gradients[0] == 1).all() and (parameters[0] == 0).all()  # nothing was exchanged
