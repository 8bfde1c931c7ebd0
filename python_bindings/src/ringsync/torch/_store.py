"""The store of a default group made under mpirun (ringsync.torch.init_process_group()).

ringsync itself bootstraps through MPI and needs no store, but much of torch.distributed
rendezvouses through the default group's store: a Gloo or NCCL subgroup (dist.new_group(backend=
"gloo")), TORCH_DISTRIBUTED_DEBUG=DETAIL's checking group, elastic agents, anything keyed on it.
A process-local HashStore (what torch's own MPI backend leaves users with) makes all of those wait
for peers that can never reach it. So rank 0 serves a TCPStore on a free port, and the address goes
to the other ranks through MPI: every address of rank 0's interfaces, loopback last, the first one a
rank can connect to being used (ranks on other hosts cannot use 127.0.0.1).
RINGSYNC_STORE_ADDR (or MASTER_ADDR) names the address instead where the interfaces do not tell.
"""

import datetime
import fcntl
import json
import os
import socket
import struct

import torch.distributed as dist

from .._ringsync import BackendError, Options
from . import _c10d

_SIOCGIFADDR = 0x8915  # Linux: an interface's IPv4 address
_CONNECT_SECONDS = 2.0


def _interface_addresses():
    """IPv4 addresses of this host's interfaces, loopback last."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            try:
                request = struct.pack("256s", name.encode()[:15])
                found.append(socket.inet_ntoa(fcntl.ioctl(s.fileno(), _SIOCGIFADDR, request)[20:24]))
            except OSError:  # no IPv4 address on this interface
                continue
    outside = [a for a in found if not a.startswith("127.")]
    return outside + ["127.0.0.1"]


def _candidates():
    named = os.environ.get("RINGSYNC_STORE_ADDR") or os.environ.get("MASTER_ADDR")
    return [named] if named else _interface_addresses()


def _reachable(hosts, port):
    for host in hosts:
        try:
            with socket.create_connection((host, port), timeout=_CONNECT_SECONDS):
                return host
        except OSError:
            continue
    raise BackendError(f"ringsync.torch.init_process_group: rank 0's store (port {port}) is not reachable from this "
                       f"host at any of its addresses {hosts}; set RINGSYNC_STORE_ADDR to an address of rank 0's "
                       f"host that this one can reach")


def world_store(rank, size, timeout=None):
    """A TCPStore for the world's ranks: served by rank 0, its address sent through MPI (collective)."""
    timeout = timeout if timeout is not None else dist.constants.default_pg_timeout
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=timeout)
    store = None
    message = b""
    if rank == 0:
        try:
            store = dist.TCPStore("127.0.0.1", 0, size, is_master=True, timeout=timeout, wait_for_workers=False)
            message = json.dumps({"port": store.port, "hosts": _candidates()}).encode()
        except Exception as error:  # noqa: BLE001 - every rank must learn it, not only this one
            message = json.dumps({"error": f"{type(error).__name__}: {error}"}).encode()
    # Every rank waits here for rank 0 (at most ringsync's deadline: a rank that never calls is a
    # TimeoutError, not a hang).
    seconds = Options.from_environment().timeout_seconds
    address = json.loads(_c10d.broadcast_bytes(message, 0, seconds).decode())
    if "error" in address:
        raise BackendError(f"ringsync.torch.init_process_group: rank 0 could not start the store: {address['error']}")
    if rank == 0:
        return store
    host = _reachable(address["hosts"], address["port"])
    return dist.TCPStore(host, address["port"], size, is_master=False, timeout=timeout)
