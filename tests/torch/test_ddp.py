"""DistributedDataParallel trains on "ringsync" exactly as on "gloo" and as one process does.

Every rank holds the same global batch and trains on its 1/n shard. After several SGD steps the
parameters must be bit-identical on every rank and equal (<= 1e-6 relative, in the max norm) to
the same DDP training on "gloo" and to one process training on the whole batch without any
communication. BatchNorm normalises each rank's shard under DDP (it is not SyncBatchNorm), so the
one-process reference runs the global batch as the same n shards and sums their 1/n-weighted
losses before one step, which is what DDP's averaged gradient computes.
"""

import copy
import threading

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from conftest import same_on_every_rank

STEPS = 6
SHARD = 5  # samples per rank (global batch 5n)


class WithUnused(nn.Module):
    """`unused` never takes part in forward: DDP must find it every step (find_unused_parameters)."""

    def __init__(self):
        super().__init__()
        self.used = nn.Linear(16, 12)
        self.unused = nn.Linear(16, 12)
        self.head = nn.Linear(12, 4)

    def forward(self, x):
        return self.head(torch.relu(self.used(x)))


def batchnorm_model():
    return nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))


def data(n):
    g = torch.Generator().manual_seed(1234)
    return [(torch.randn(SHARD * n, 16, generator=g), torch.randn(SHARD * n, 4, generator=g)) for _ in range(STEPS)]


def initial(make):
    torch.manual_seed(42)  # the same initial model on every rank (DDP also broadcasts rank 0's)
    return make()


def train_ddp(model, group, find_unused):
    n, rank = dist.get_world_size(), dist.get_rank()
    # A small bucket cap: several buckets per step, all-reduced while backward goes on.
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.002, find_unused_parameters=find_unused)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    for x, y in data(n):
        shard = slice(rank * SHARD, (rank + 1) * SHARD)
        opt.zero_grad()
        nn.functional.mse_loss(ddp(x[shard]), y[shard]).backward()
        opt.step()
    return model


def train_alone(model, shards):
    """One process, the whole batch, as `shards` equal shards (see the module docstring)."""
    n = dist.get_world_size()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for x, y in data(n):
        opt.zero_grad()
        loss = sum(nn.functional.mse_loss(model(xs), ys) for xs, ys in zip(x.chunk(shards), y.chunk(shards)))
        (loss / shards).backward()
        opt.step()
    return model


def relative_difference(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()


def check(trained, gloo_trained, alone, gloo):
    params = dict(trained.named_parameters())
    for name, p in params.items():
        p = p.detach()
        assert same_on_every_rank(p, gloo), f"{name} differs between ranks"
        on_gloo = dict(gloo_trained.named_parameters())[name].detach()
        single = dict(alone.named_parameters())[name].detach()
        assert relative_difference(p, on_gloo) <= 1e-6, f"{name}: ringsync vs gloo {relative_difference(p, on_gloo)}"
        assert relative_difference(p, single) <= 1e-6, f"{name}: ringsync vs one process {relative_difference(p, single)}"


@pytest.mark.parametrize("find_unused", [False, True], ids=["all_used", "find_unused"])
def test_linear_batchnorm_relu_linear(gloo, find_unused):
    start = initial(batchnorm_model)
    trained = train_ddp(copy.deepcopy(start), None, find_unused)
    gloo_trained = train_ddp(copy.deepcopy(start), gloo, find_unused)
    alone = train_alone(copy.deepcopy(start), dist.get_world_size())
    check(trained, gloo_trained, alone, gloo)
    # DDP broadcasts rank 0's buffers before every forward, then each rank's forward updates its
    # running statistics from its own shard: the same on both backends.
    for (name, buffer), (_, on_gloo) in zip(trained.named_buffers(), gloo_trained.named_buffers()):
        assert relative_difference(buffer.double(), on_gloo.double()) <= 1e-6, f"buffer {name}"


def test_a_model_with_an_unused_parameter(gloo):
    start = initial(WithUnused)
    trained = train_ddp(copy.deepcopy(start), None, True)
    gloo_trained = train_ddp(copy.deepcopy(start), gloo, True)
    alone = train_alone(copy.deepcopy(start), 1)
    check(trained, gloo_trained, alone, gloo)
    assert torch.equal(trained.unused.weight, start.unused.weight), "the unused parameter must not move"
    assert not torch.equal(trained.used.weight, start.used.weight)


class HoldBackward(torch.autograd.Function):
    """Identity; its backward waits (up to `timeout` s) until `released` is set, without using the CPU."""

    @staticmethod
    def forward(ctx, x, released, timeout, waited):
        ctx.released, ctx.timeout, ctx.waited = released, timeout, waited
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        ctx.waited.append(ctx.released.wait(ctx.timeout))
        return grad, None, None, None


def test_buckets_are_all_reduced_while_backward_is_still_running(gloo):
    """The overlap DDP relies on: a bucket's all-reduce completes before backward reaches the layers
    in front of it.

    Backward is held in front of the last two layers until the all-reduce of the bucket holding the
    last layer (DDP's bucket 0) has completed. A backend whose work progressed only when DDP waits
    for it at the end of backward would hold here until the timeout (the test then fails, and
    backward goes on so that nothing hangs). The hook is DDP's default all-reduce plus a marker.
    """
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    rank = dist.get_rank()
    torch.manual_seed(7)
    first, middle, last = nn.Linear(16, 64), nn.Linear(64, 64), nn.Linear(64, 4)
    released, waited, completed = threading.Event(), [], []

    class Held(nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.middle, self.last = first, middle, last

        def forward(self, x):
            h = HoldBackward.apply(torch.relu(self.first(x)), released, 30.0, waited)
            return self.last(torch.relu(self.middle(h)))

    def marking_hook(group, bucket):
        # Every parameter of the bucket and the bucket's index, once its all-reduce has completed.
        index, params = bucket.index(), [id(p) for p in bucket.parameters()]

        def done(fut):
            completed.append((index, params))
            if id(last.weight) in params:
                released.set()
            return fut.value()

        return default_hooks.allreduce_hook(group, bucket).then(done)

    # A 2 KB cap: each parameter its own bucket, so the last layer's all-reduce can start early.
    ddp = DDP(Held(), bucket_cap_mb=0.002)
    ddp.register_comm_hook(None, marking_hook)
    x, y = torch.full((SHARD, 16), float(rank + 1)), torch.zeros(SHARD, 4)
    # DDP's first backward runs as one bucket (it learns the order gradients arrive in, then
    # rebuilds its buckets): a first step, not held, then the held one.
    released.set()
    nn.functional.mse_loss(ddp(x), y).backward()
    assert len(completed) == 1, f"expected one bucket in DDP's first backward, got {len(completed)}"
    released.clear()
    waited.clear()
    completed.clear()
    ddp.zero_grad()
    nn.functional.mse_loss(ddp(x), y).backward()
    assert waited == [True], ("backward was held 30 s and the all-reduce of the last layer's bucket did "
                              f"not complete meanwhile (completed buckets: {[i for i, _ in completed]})")
    # The first layer's gradient was all-reduced after backward was released: after the last layer's.
    order = [params for _, params in completed]
    in_last = next(k for k, params in enumerate(order) if id(last.weight) in params)
    in_first = next(k for k, params in enumerate(order) if id(first.weight) in params)
    assert in_last < in_first, "the first layer's bucket completed before the last layer's"
    # And the gradients are the average over ranks, the same on every rank.
    for p in ddp.parameters():
        assert same_on_every_rank(p.grad, gloo), "a gradient differs between ranks"
