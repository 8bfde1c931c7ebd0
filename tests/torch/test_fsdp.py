"""FSDP2 (fully_shard) trains on "ringsync" as one process does on the whole batch.

FSDP2 all-gathers each layer's parameters (all_gather_into_tensor) before its forward and
reduce-scatters its gradients (reduce_scatter_tensor) after backward: on ringsync those are its
own all-gather and reduce-scatter. N ranks, each on its shard of every global batch, must end with
the parameters one process gets on the whole batch (SGD with momentum, a few steps), within 1e-6
relative, and identical on every rank.
"""

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

from conftest import same_on_every_rank

STEPS = 6
GLOBAL_BATCH = 12  # divides by 2 and 3 ranks: every rank's mean loss weighs alike


def make_model():
    torch.manual_seed(7)
    return nn.Sequential(nn.Linear(10, 33), nn.Tanh(), nn.Linear(33, 17), nn.Tanh(), nn.Linear(17, 4))


def global_batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(GLOBAL_BATCH, 10, generator=g, dtype=torch.float64), torch.randn(
        GLOBAL_BATCH, 4, generator=g, dtype=torch.float64)


def train(model, steps, shard):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(steps):
        x, y = global_batch(step)
        x, y = shard(x), shard(y)
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def test_fsdp2_matches_one_process_on_the_whole_batch():
    rank, size = dist.get_rank(), dist.get_world_size()
    reference = make_model().double()
    train(reference, STEPS, shard=lambda t: t)  # one process, the whole batch, no communication

    sharded = make_model().double()
    for layer in sharded:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(sharded)
    per_rank = GLOBAL_BATCH // size
    train(sharded, STEPS, shard=lambda t: t[rank * per_rank:(rank + 1) * per_rank])

    for (name, want), got in zip(reference.named_parameters(), sharded.parameters()):
        full = got.full_tensor().detach()
        scale = want.detach().abs().max().clamp_min(1e-12)
        error = (full - want.detach()).abs().max() / scale
        assert error <= 1e-6, f"{name}: relative error {float(error):.3g} after {STEPS} steps at {size} ranks"
        assert same_on_every_rank(full, None), f"{name} differs between ranks"
