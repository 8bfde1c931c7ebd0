"""TORCH_DISTRIBUTED_DEBUG=DETAIL (torch's documented way to debug a desync) with "ringsync": torch
wraps the group in its checking wrapper (a Gloo helper group over the store, which needs the real
store of ringsync.torch.init_process_group, and the group's sequence numbers); a DDP step runs on
the default group and on a group made afterwards, and ranks that call different shapes get torch's
own mismatch report before ringsync sees the call. Run with the variable set, under mpirun.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ringsync
import ringsync.torch


def ddp_step(group):
    n, rank = dist.get_world_size(), dist.get_rank()
    torch.manual_seed(5)
    ddp = DDP(nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 2)), process_group=group)
    x = torch.full((4, 6), float(rank + 1))
    ddp(x).sum().backward()
    # The gradient of the bias of the last layer is the number of samples, averaged over the ranks.
    assert torch.equal(ddp.module[2].bias.grad, torch.full((2,), 4.0)), ddp.module[2].bias.grad
    return n


def main():
    assert os.environ.get("TORCH_DISTRIBUTED_DEBUG") == "DETAIL", "run with TORCH_DISTRIBUTED_DEBUG=DETAIL"
    ringsync.torch.init_process_group()
    assert dist.get_debug_level() == dist.DebugLevel.DETAIL
    ddp_step(None)
    later = dist.new_group(backend="ringsync")
    ddp_step(later)
    x = torch.ones(3 if dist.get_rank() == 0 else 4)
    try:
        dist.all_reduce(x)
    except RuntimeError as error:  # torch's wrapper compares the calls first
        assert "mismatch" in str(error).lower() or "Mismatch" in type(error).__name__, error
    else:
        raise AssertionError("ranks calling different shapes were not reported")
    dist.barrier()
    if dist.get_rank() == 0:
        print(f"debug DETAIL: DDP steps on the default group and a later one on {dist.get_world_size()} ranks, "
              "a shape mismatch reported")
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
