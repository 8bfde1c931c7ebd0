"""What torch asks of a backend beyond collectives: split_group (members only), sequence numbers,
abort, coalesced all-gather / reduce-scatter (torch's functional collectives, DTensor), sparse
tensors refused by name, a Gloo group beside ringsync's."""

import datetime

import pytest
import torch
import torch.distributed as dist

import ringsync


def backend_of(group):
    return group._get_backend(torch.device("cpu"))


def test_split_group_members_only():
    n, rank = dist.get_world_size(), dist.get_rank()
    assert backend_of(dist.group.WORLD).supports_splitting
    pairs = [list(range(k, min(k + 2, n))) for k in range(0, n, 2)]  # [[0, 1], [2]] at 3 ranks
    mine = next(p for p in pairs if rank in p)
    sub = dist.split_group(split_ranks=pairs)
    assert sub is not None and dist.get_world_size(sub) == len(mine)
    x = torch.full((4,), float(rank))
    dist.all_reduce(x, group=sub)
    assert torch.equal(x, torch.full((4,), float(sum(mine))))
    dist.destroy_process_group(sub)


def test_split_group_leaving_ranks_out():
    """Only ranks 0 and 1 are in a group: the others get NON_GROUP_MEMBER and call nothing."""
    rank = dist.get_rank()
    sub = dist.split_group(split_ranks=[[1, 0]])  # order kept: global rank 1 is the new rank 0
    if rank in (0, 1):
        assert dist.get_rank(sub) == (1 - rank)
        x = torch.full((2,), float(rank + 1))
        dist.broadcast(x, group_src=0, group=sub)
        assert torch.equal(x, torch.full((2,), 2.0))
        dist.destroy_process_group(sub)
    else:
        assert sub == dist.GroupMember.NON_GROUP_MEMBER
    dist.barrier()


def test_sequence_numbers_count_the_groups_collectives():
    group = dist.new_group(backend="ringsync")
    start = backend_of(group)._get_sequence_number_for_group()
    x = torch.ones(2)
    dist.all_reduce(x, group=group)
    dist.broadcast(x, src=0, group=group)
    dist.barrier(group=group)
    assert backend_of(group)._get_sequence_number_for_group() == start + 3
    seq = torch.tensor([backend_of(group)._get_sequence_number_for_group()])
    dist.all_reduce(seq, op=dist.ReduceOp.MAX)
    assert seq.item() == start + 3, "ranks disagree about the sequence number"
    dist.destroy_process_group(group)


def test_abort_fails_later_calls_with_aborted_error():
    group = dist.new_group(backend="ringsync")
    x = torch.ones(3)
    dist.all_reduce(x, group=group)
    backend_of(group).abort()
    with pytest.raises(ringsync.AbortedError, match="abort"):
        dist.all_reduce(x, group=group)
    with pytest.raises(ringsync.AbortedError, match="abort"):
        dist.send(x, (dist.get_rank() + 1) % dist.get_world_size(), group=group)
    dist.destroy_process_group(group)


def test_all_gather_and_reduce_scatter_coalesced():
    n, rank = dist.get_world_size(), dist.get_rank()
    outs = [torch.empty(2 * n), torch.empty(3 * n, dtype=torch.float64)]
    with dist._coalescing_manager():
        dist.all_gather_into_tensor(outs[0], torch.full((2,), float(rank)))
        dist.all_gather_into_tensor(outs[1], torch.full((3,), float(rank), dtype=torch.float64))
    assert torch.equal(outs[0], torch.arange(n, dtype=torch.float32).repeat_interleave(2))
    assert torch.equal(outs[1], torch.arange(n, dtype=torch.float64).repeat_interleave(3))
    scattered = [torch.empty(2), torch.empty(1)]
    with dist._coalescing_manager():
        dist.reduce_scatter_tensor(scattered[0], torch.arange(2 * n, dtype=torch.float32) + rank)
        dist.reduce_scatter_tensor(scattered[1], torch.ones(n))
    base = n * (n - 1) / 2
    assert torch.equal(scattered[0], torch.tensor([2 * rank * n + base, (2 * rank + 1) * n + base]))
    assert torch.equal(scattered[1], torch.full((1,), float(n)))


def test_all_gather_coalesced_lists():
    """torch's layout: one output list per rank, each like the inputs."""
    n, rank = dist.get_world_size(), dist.get_rank()
    inputs = [torch.full((2,), float(rank)), torch.full((1, 3), 10.0 + rank), torch.full((4,), -float(rank))]
    outputs = [[torch.empty_like(t) for t in inputs] for _ in range(n)]
    dist.all_gather_coalesced(outputs, inputs)
    for r in range(n):
        assert torch.equal(outputs[r][0], torch.full((2,), float(r)))
        assert torch.equal(outputs[r][1], torch.full((1, 3), 10.0 + r))
        assert torch.equal(outputs[r][2], torch.full((4,), -float(r)))


def test_functional_collectives_and_dtensor_redistribute():
    """torch's functional collectives (all_gather_tensor, reduce_scatter_tensor) and DTensor's
    Shard -> Replicate and Partial -> Shard, which go through the coalesced and single-tensor calls."""
    from torch.distributed._functional_collectives import all_gather_tensor, reduce_scatter_tensor
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    n, rank = dist.get_world_size(), dist.get_rank()
    gathered = all_gather_tensor(torch.full((2,), float(rank)), 0, dist.group.WORLD)
    assert torch.equal(gathered, torch.arange(n, dtype=torch.float32).repeat_interleave(2))
    reduced = reduce_scatter_tensor(torch.ones(2 * n), "sum", 0, dist.group.WORLD)
    assert torch.equal(reduced, torch.full((2,), float(n)))

    mesh = init_device_mesh("cpu", (n,))
    full = torch.arange(4 * n * 3, dtype=torch.float32).reshape(4 * n, 3)
    sharded = DTensor.from_local(full.chunk(n)[rank], mesh, [Shard(0)])
    assert torch.equal(sharded.full_tensor(), full)
    assert torch.equal(sharded.redistribute(mesh, [Replicate()]).to_local(), full)
    partial = DTensor.from_local(torch.full((2 * n, 2), float(rank + 1)), mesh, [Partial()])
    summed = partial.redistribute(mesh, [Shard(0)]).to_local()
    assert torch.equal(summed, torch.full((2, 2), float(n * (n + 1) / 2)))


def test_sparse_tensors_are_refused_by_name():
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 2]]), torch.tensor([1.0, 2.0]), (4,))
    with pytest.raises(ringsync.InvalidArgument, match="of a torch.sparse_coo tensor: ringsync carries dense .*'gloo' group"):
        dist.all_reduce(sparse)
    # (torch itself refuses most other collectives of a sparse tensor before any backend sees them.)


def test_ddp_with_a_sparse_embedding_runs_on_a_gloo_group_beside(gloo):
    """The way out the refusal names: the sparse gradients through a Gloo group over the same ranks."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(0)
    model = DDP(torch.nn.Embedding(10, 3, sparse=True), process_group=gloo)
    model(torch.tensor([[dist.get_rank(), 5]])).sum().backward()
    grad = model.module.weight.grad.to_dense()
    n = dist.get_world_size()
    assert torch.equal(grad[5], torch.full((3,), 1.0))  # every rank's 1, averaged
    for r in range(n):
        assert torch.equal(grad[r], torch.full((3,), 1.0 / n))


def test_monitored_barrier_on_ringsync_groups():
    """Gloo's protocol: every rank passes, or rank 0 names the rank that did not arrive."""
    n, rank = dist.get_world_size(), dist.get_rank()
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    group = dist.new_group(backend="ringsync", timeout=datetime.timedelta(seconds=2))
    late = n - 1
    if rank == 0:
        with pytest.raises(ringsync.TimeoutError, match=f"Rank {late} failed to pass monitoredBarrier in 500 ms"):
            dist.monitored_barrier(group=group, timeout=datetime.timedelta(milliseconds=500))
    elif rank != late:
        with pytest.raises(ringsync.TimeoutError, match=f"Rank {rank} successfully reached monitoredBarrier"):
            dist.monitored_barrier(group=group, timeout=datetime.timedelta(milliseconds=500))
    dist.barrier()
    dist.destroy_process_group(group)


def test_a_gloo_group_and_monitored_barrier_beside_the_default_group(gloo):
    x = torch.full((3,), float(dist.get_rank()))
    dist.all_reduce(x, group=gloo)
    n = dist.get_world_size()
    assert torch.equal(x, torch.full((3,), n * (n - 1) / 2))
    dist.monitored_barrier(group=gloo)
