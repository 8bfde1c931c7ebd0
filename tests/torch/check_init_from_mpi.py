"""ringsync.torch.init_process_group() under mpirun with no MASTER_ADDR, RANK or WORLD_SIZE: rank and
size come from MPI; a subgroup (new_group, through mpi4py) works beside the world group."""

import os
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
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0:
        print(f"init_from_mpi: {n} ranks, rank/size from MPI, subgroup {members}: ok")
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
