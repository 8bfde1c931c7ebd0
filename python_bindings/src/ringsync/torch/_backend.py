"""Creating ringsync process groups for torch.distributed: the registered creator and the one-liner.

torch's rank r must be MPI's rank r: ringsync's communicator is built over MPI_COMM_WORLD (or,
for a torch subgroup, over those MPI ranks through mpi4py), so the backend runs under mpirun.
"""

import atexit
import datetime
import weakref

import torch.distributed as dist

from .._ringsync import Communicator, InvalidArgument, Options
from ._process_group import ProcessGroupRingsync

BACKEND_NAME = "ringsync"

# The world communicator init_process_group built to learn rank and size, handed to the creator
# of the default group so MPI_COMM_WORLD is duplicated once.
_pending_world = None
# Every group made here, so their progress threads stop (queued work done) before ringsync
# finalizes MPI at exit.
_groups = weakref.WeakSet()


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


def _world_communicator(options):
    global _pending_world
    comm, _pending_world = _pending_world, None
    return comm if comm is not None else Communicator(options=options)


def _group_communicator(ranks, options):
    """A communicator over the MPI ranks `ranks` (collective over those ranks only)."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise InvalidArgument("ringsync backend: a subgroup (torch.distributed.new_group) needs mpi4py "
                              "(pip install mpi4py) to build its MPI communicator") from error
    world = MPI.COMM_WORLD
    group = world.Get_group().Incl(list(ranks))
    sub = world.Create_group(group)
    try:
        return Communicator(sub, options)  # ringsync duplicates it
    finally:
        sub.Free()
        group.Free()


def create_process_group(dist_backend_opts, backend_options=None):
    """The creator torch.distributed calls for backend "ringsync" (registered with extended_api=True)."""
    rank, size = dist_backend_opts.group_rank, dist_backend_opts.group_size
    options = _options(dist_backend_opts.timeout, backend_options)
    ranks = list(dist_backend_opts.global_ranks_in_group)  # empty for the default group
    comm = _group_communicator(ranks, options) if ranks else _world_communicator(options)
    if comm.size != size or comm.rank != rank:
        raise InvalidArgument(
            f"ringsync backend: torch says rank {rank} of {size}, MPI says rank {comm.rank} of {comm.size}; "
            "launch with `mpirun -np N` and let ringsync.torch.init_process_group() take rank and size "
            "from MPI (or pass rank=OMPI_COMM_WORLD_RANK, world_size=OMPI_COMM_WORLD_SIZE)")
    group = ProcessGroupRingsync(comm, rank, size)
    _groups.add(group)
    return group


def init_process_group(**kwargs):
    """torch.distributed.init_process_group("ringsync", ...) with rank and size from MPI.

    Under mpirun no MASTER_ADDR, RANK or WORLD_SIZE is needed: without a store or init_method the
    default group gets a process-local store (ringsync bootstraps through MPI, not the store).
    Other keyword arguments go to torch.distributed.init_process_group unchanged.
    """
    global _pending_world
    kwargs.setdefault("backend", BACKEND_NAME)
    if "store" not in kwargs and "init_method" not in kwargs:
        world = Communicator(options=_options(kwargs.get("timeout"), kwargs.get("pg_options")))
        if kwargs.get("rank", world.rank) != world.rank or kwargs.get("world_size", world.size) != world.size:
            raise InvalidArgument(f"ringsync.torch.init_process_group: rank={kwargs.get('rank')}, "
                                  f"world_size={kwargs.get('world_size')} given, but MPI says rank {world.rank} "
                                  f"of {world.size}")
        kwargs["rank"], kwargs["world_size"] = world.rank, world.size
        kwargs["store"] = dist.HashStore()
        _pending_world = world
    try:
        dist.init_process_group(**kwargs)
    finally:
        _pending_world = None


def _shutdown_all():
    for group in list(_groups):
        group.shutdown()


atexit.register(_shutdown_all)


def register():
    dist.Backend.register_backend(BACKEND_NAME, create_process_group, extended_api=True, devices=["cpu", "cuda"])
