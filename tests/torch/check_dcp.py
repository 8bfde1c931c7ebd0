"""torch.distributed.checkpoint (DCP) on "ringsync": an FSDP2-sharded model and its Adam state
saved after some steps, loaded into a fresh model (other initial values), and training resumed
from it gives exactly the parameters of training without the interruption.

DCP plans and commits through the default group (gather_object, scatter_object_list, all_reduce,
broadcast), so this runs those on ringsync. Run under mpirun (any number of ranks).
"""

import shutil
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard

import ringsync
import ringsync.torch

BEFORE, AFTER = 3, 4  # steps before the checkpoint, and after it


def make(seed):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(12, 30), nn.ReLU(), nn.Linear(30, 17), nn.ReLU(), nn.Linear(17, 3))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def batches(steps, first):
    rank = dist.get_rank()
    for step in range(first, first + steps):
        g = torch.Generator().manual_seed(1000 * step + rank)  # each rank its own data, as DDP/FSDP have
        yield torch.randn(8, 12, generator=g), torch.randn(8, 3, generator=g)


def train(model, optimizer, steps, first):
    for x, y in batches(steps, first):
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()


def full_parameters(model):
    return {name: p.full_tensor().clone() for name, p in model.named_parameters()}


def shared_directory():
    path = [tempfile.mkdtemp(prefix="ringsync_dcp_") if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(path, src=0)
    return path[0]


def main():
    ringsync.torch.init_process_group()
    directory = shared_directory()
    try:
        # Without interruption.
        model, optimizer = make(seed=1)
        train(model, optimizer, BEFORE + AFTER, 0)
        straight = full_parameters(model)

        # Interrupted: save after BEFORE steps ...
        model, optimizer = make(seed=1)
        train(model, optimizer, BEFORE, 0)
        model_state, optimizer_state = get_state_dict(model, optimizer)
        dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=directory)
        del model, optimizer
        # ... and resume in a fresh model with other initial values.
        model, optimizer = make(seed=2)
        model_state, optimizer_state = get_state_dict(model, optimizer)
        state = {"model": model_state, "optimizer": optimizer_state}
        dcp.load(state, checkpoint_id=directory)
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
        train(model, optimizer, AFTER, BEFORE)
        resumed = full_parameters(model)

        for name, value in straight.items():
            assert torch.equal(resumed[name], value), (
                f"{name}: resumed training differs from uninterrupted by "
                f"{(resumed[name] - value).abs().max().item():.3g}")
        dist.barrier()
    finally:
        if dist.get_rank() == 0:
            shutil.rmtree(directory, ignore_errors=True)
    if dist.get_rank() == 0:
        print(f"dcp: FSDP2 model of {sum(v.numel() for v in straight.values())} values on {dist.get_world_size()} "
              f"ranks saved after {BEFORE} steps, resumed for {AFTER}: equal to uninterrupted training")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        status = main()
    except Exception:  # noqa: BLE001 - end the whole job, so no peer waits for this rank
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        ringsync.abort(1)
    sys.exit(status)
