"""ringsync as a torch.distributed backend: importing this module registers backend "ringsync".

    import ringsync.torch
    ringsync.torch.init_process_group()        # under mpirun: rank and size from MPI
    # or: torch.distributed.init_process_group("ringsync", init_method=..., rank=..., world_size=...)
    model = torch.nn.parallel.DistributedDataParallel(model)

The backend is C++ (ProcessGroupRingsync, a c10d::Backend in the extension ringsync.torch._c10d,
compiled against the installed torch). CPU tensors go through ringsync's host ring, CUDA tensors
through its device path (NCCL or staged) on the caller's current stream. Collectives run in order
on one C++ progress thread per group and return Work objects that complete there, so DDP overlaps
its all-reduces with backward. Errors are ringsync's exceptions (MismatchError, TimeoutError,
InvalidArgument, ...).
"""

try:
    import torch as _torch  # noqa: F401 - fail here with a hint, not deep inside torch.distributed
except ImportError as _error:
    raise ImportError("ringsync.torch needs PyTorch: scripts/setup.sh --with-torch (or pip install torch)") from _error

try:
    from ._c10d import ProcessGroupRingsync
except ModuleNotFoundError as _error:
    raise ImportError(
        "ringsync.torch's C++ backend (ringsync/torch/_c10d) is not in this ringsync package: it is compiled "
        "against torch only when the Python that builds the package imports torch. Install torch first "
        "(scripts/setup.sh --with-torch), then rebuild with `pip install --no-build-isolation ./python_bindings`"
    ) from _error
except ImportError as _error:
    raise ImportError(
        f"ringsync.torch's C++ backend does not load with torch {_torch.__version__} (was the package built against "
        f"another torch? rebuild it with `pip install --no-build-isolation ./python_bindings`): {_error}") from _error

from ._backend import BACKEND_NAME, create_process_group, init_process_group, register

register()

__all__ = ["BACKEND_NAME", "ProcessGroupRingsync", "create_process_group", "init_process_group", "register"]
