"""ringsync as a torch.distributed backend: importing this module registers backend "ringsync".

    import ringsync.torch
    ringsync.torch.init_process_group()        # under mpirun: rank and size from MPI
    # or: torch.distributed.init_process_group("ringsync", init_method=..., rank=..., world_size=...)
    model = torch.nn.parallel.DistributedDataParallel(model)

CPU tensors go through ringsync's host ring, CUDA tensors through its device path (NCCL or staged)
on the caller's current stream. Collectives run in order on one progress thread per group and
return Work objects that complete later, so DDP overlaps its all-reduces with backward. Errors are
ringsync's exceptions (MismatchError, TimeoutError, InvalidArgument, ...).
"""

try:
    import torch as _torch  # noqa: F401 - fail here with a hint, not deep inside torch.distributed
except ImportError as _error:
    raise ImportError("ringsync.torch needs PyTorch: scripts/setup.sh --with-torch (or pip install torch)") from _error

from ._backend import BACKEND_NAME, create_process_group, init_process_group, register
from ._process_group import ProcessGroupRingsync

register()

__all__ = ["BACKEND_NAME", "ProcessGroupRingsync", "create_process_group", "init_process_group"]
