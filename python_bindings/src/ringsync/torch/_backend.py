"""Creating ringsync process groups for torch.distributed: the registered creator and the one-liner.

torch's rank r must be MPI's rank r: ringsync's communicator is built over MPI_COMM_WORLD (or,
for a torch subgroup, over those MPI ranks, made by its members), so the backend runs under mpirun.
The collectives themselves are C++ (ProcessGroupRingsync, from ringsync.torch._c10d).
"""

import atexit
import datetime

import torch.distributed as dist

from .. import _ringsync
from .._ringsync import InvalidArgument, Options
from . import _c10d
from ._store import world_store

BACKEND_NAME = "ringsync"


def _options(timeout, backend_options):
    if backend_options is not None and not isinstance(backend_options, Options):
        raise InvalidArgument(f"ringsync backend: pg_options must be a ringsync.Options, got "
                              f"{type(backend_options).__name__}")
    options = backend_options if backend_options is not None else Options.from_environment()
    # torch's default timeout (30 min) is not a choice the user made: ringsync's own deadline
    # (RINGSYNC_TIMEOUT_SECONDS, or the Options given) stays; an explicit timeout= replaces it.
    if timeout is not None and timeout != dist.constants.default_pg_timeout:
        options.timeout_seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    return options


def create_process_group(dist_backend_opts, backend_options=None):
    """The creator torch.distributed calls for backend "ringsync" (registered with extended_api=True)."""
    rank, size = dist_backend_opts.group_rank, dist_backend_opts.group_size
    options = _options(dist_backend_opts.timeout, backend_options)
    _ringsync.init()  # MPI, owned (and finalised at exit) by ringsync's bindings
    ranks = list(dist_backend_opts.global_ranks_in_group)  # empty for the default group
    # A subgroup: made by its members only, over those MPI ranks (MPI_Comm_create_group).
    return _c10d.ProcessGroupRingsync(rank, size, options, ranks=ranks)


def init_process_group(**kwargs):
    """torch.distributed.init_process_group("ringsync", ...) with rank and size from MPI.

    Under mpirun no MASTER_ADDR, RANK or WORLD_SIZE is needed. Without a store or init_method the
    group gets a real store: a TCPStore served by rank 0 on a free port, its address sent to the
    other ranks through MPI (ringsync.torch._store), so that what rendezvouses through the store
    works beside ringsync's group: dist.new_group(backend="gloo"), monitored_barrier on such a
    group, TORCH_DISTRIBUTED_DEBUG=DETAIL. Other keyword arguments go to
    torch.distributed.init_process_group unchanged.
    """
    kwargs.setdefault("backend", BACKEND_NAME)
    if "store" not in kwargs and "init_method" not in kwargs:
        _ringsync.init()
        _c10d.check_mpi()  # a group that cannot be made must fail here on every rank, before the store
        rank, size = _c10d.world_rank_and_size()
        if kwargs.get("rank", rank) != rank or kwargs.get("world_size", size) != size:
            raise InvalidArgument(f"ringsync.torch.init_process_group: rank={kwargs.get('rank')}, "
                                  f"world_size={kwargs.get('world_size')} given, but MPI says rank {rank} "
                                  f"of {size}")
        kwargs["rank"], kwargs["world_size"] = rank, size
        kwargs["store"] = world_store(rank, size, kwargs.get("timeout"))
    dist.init_process_group(**kwargs)


# Registered after `import ringsync` registered ringsync.finalize, so it runs first (atexit is last
# in, first out): every group's queued work finishes and its communicator is freed before MPI is.
atexit.register(_c10d.shutdown_all)


def register():
    dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True, devices=["cpu", "cuda"])
