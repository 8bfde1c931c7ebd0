"""ringsync.torch.init_process_group() under mpirun with no MASTER_ADDR, RANK or WORLD_SIZE: rank and
size come from MPI; a ringsync subgroup (new_group, made by its members) works beside the world
group; the default group's store is a real one (a TCPStore served by rank 0, reached from every
rank: from other hosts at an address of rank 0's host, not 127.0.0.1), so a Gloo group over it,
monitored_barrier and the store's own keys work."""

import os
import socket
import sys

for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"):
    os.environ.pop(name, None)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import ringsync  # noqa: E402
import ringsync.torch  # noqa: E402


def main():
    ringsync.torch.init_process_group()
    rank, n = dist.get_rank(), dist.get_world_size()
    assert dist.get_backend() == "ringsync", dist.get_backend()
    assert rank == int(os.environ["OMPI_COMM_WORLD_RANK"]) and n == int(os.environ["OMPI_COMM_WORLD_SIZE"])
    x = torch.full((5,), float(rank))
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((5,), n * (n - 1) / 2)), x

    # The last two ranks as a subgroup; the others are not members and skip its collectives.
    members = [n - 2, n - 1]
    pair = dist.new_group(ranks=members, backend="ringsync")
    if rank in members:
        y = torch.full((3,), float(rank))
        dist.all_reduce(y, group=pair)
        assert torch.equal(y, torch.full((3,), float(sum(members)))), y
    check_store_users(rank, n)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"init_from_mpi: {n} ranks, rank/size from MPI, subgroup {members}, gloo group and store: ok")
    return 0


def tcp_store(store):
    while not isinstance(store, dist.TCPStore):
        store = store.underlying_store  # PrefixStore
    return store


def check_store_users(rank, n):
    gloo = dist.new_group(backend="gloo")
    z = torch.full((2,), float(rank + 1))
    dist.all_reduce(z, group=gloo)
    assert torch.equal(z, torch.full((2,), n * (n + 1) / 2)), z
    dist.monitored_barrier(group=gloo)
    store = dist.distributed_c10d._get_default_store()
    store.set(f"from_{rank}", str(rank * 7))
    for r in range(n):
        assert store.get(f"from_{r}") == str(r * 7).encode(), r
    # Across hosts the address used must be one of rank 0's host that this host can reach.
    hosts = [None] * n
    dist.all_gather_object(hosts, socket.gethostname(), group=gloo)
    address = tcp_store(store).host
    if hosts[rank] != hosts[0]:
        assert not address.startswith("127."), f"rank {rank} on {hosts[rank]} reached rank 0's store at {address}"
    if rank == 0:
        print(f"init_from_mpi: ranks on hosts {sorted(set(hosts))}, store at port {tcp_store(store).port}")


if __name__ == "__main__":
    try:
        status = main()
    except Exception:  # noqa: BLE001 - end the whole job, so no peer waits for this rank
        import traceback

        traceback.print_exc()
        sys.stderr.flush()
        ringsync.abort(1)
    sys.exit(status)
