"""send, recv, isend/irecv, batch_isend_irecv and recv_anysource on "ringsync": posted at the call (a
ring exchange where every rank sends before it receives completes at every size), sizes checked,
tags kept apart, a silent peer a TimeoutError naming it."""

import datetime
import time

import pytest
import torch
import torch.distributed as dist

import ringsync

SIZES = [0, 1, 7, 1 << 10, 1 << 16, (1 << 21) + 3]  # elements of float32: 0 B .. 8 MiB (eager and rendezvous)


@pytest.mark.parametrize("count", SIZES)
def test_ring_exchange_every_rank_sends_first(count):
    """Each rank sends to its right neighbour before receiving from its left one (blocking calls would
    deadlock above MPI's eager limit; posted at the call they cannot)."""
    n, rank = dist.get_world_size(), dist.get_rank()
    mine = torch.arange(count, dtype=torch.float32) + rank * 10
    got = torch.full((count,), -1.0)
    sent = dist.isend(mine, (rank + 1) % n)
    dist.recv(got, (rank - 1) % n)
    sent.wait()
    assert torch.equal(got, torch.arange(count, dtype=torch.float32) + ((rank - 1) % n) * 10)


def test_batch_isend_irecv_both_directions():
    n, rank = dist.get_world_size(), dist.get_rank()
    right, left = (rank + 1) % n, (rank - 1) % n
    to_right, to_left = torch.full((1 << 18,), float(rank)), torch.full((1 << 18,), float(-rank))
    from_left, from_right = torch.empty(1 << 18), torch.empty(1 << 18)
    ops = [dist.P2POp(dist.isend, to_right, right), dist.P2POp(dist.isend, to_left, left),
           dist.P2POp(dist.irecv, from_left, left), dist.P2POp(dist.irecv, from_right, right)]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert torch.equal(from_left, torch.full((1 << 18,), float(left)))
    assert torch.equal(from_right, torch.full((1 << 18,), float(-right)))


def test_tags_keep_messages_apart_and_order_is_kept_per_tag():
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        works = [dist.isend(torch.full((3,), float(k)), 1, tag=5 + k % 2) for k in range(6)]
        for w in works:
            w.wait()
    elif rank == 1:
        odd = [torch.empty(3) for _ in range(3)]
        even = [torch.empty(3) for _ in range(3)]
        works = [dist.irecv(t, 0, tag=6) for t in odd] + [dist.irecv(t, 0, tag=5) for t in even]
        for w in works:
            w.wait()
        assert [t[0].item() for t in even] == [0.0, 2.0, 4.0]
        assert [t[0].item() for t in odd] == [1.0, 3.0, 5.0]
    dist.barrier()
    assert n >= 2


def test_strided_and_integer_tensors():
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        dist.send(torch.arange(12, dtype=torch.int16).reshape(3, 4).t(), 1)  # 4 x 3, not contiguous
    elif rank == 1:
        out = torch.zeros(3, 4, dtype=torch.int16).t()
        dist.recv(out, 0)
        assert torch.equal(out, torch.arange(12, dtype=torch.int16).reshape(3, 4).t())
    dist.barrier()
    assert n >= 2


def test_recv_from_any_source_names_the_sender():
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        senders = set()
        for _ in range(n - 1):
            t = torch.empty(2)
            src = dist.recv(t)  # recv_anysource
            assert torch.equal(t, torch.full((2,), float(src)))
            senders.add(src)
        assert senders == set(range(1, n))
    else:
        dist.send(torch.full((2,), float(rank)), 0)
    dist.barrier()


def test_a_message_of_another_size_is_mismatch_error():
    n, rank = dist.get_world_size(), dist.get_rank()
    if rank == 0:
        dist.send(torch.ones(5), 1)
        dist.send(torch.ones(3), 1, tag=1)
    elif rank == 1:
        with pytest.raises(ringsync.MismatchError, match="rank 0 sent 20 bytes, the tensor holds 24"):
            dist.recv(torch.empty(6), 0)
        with pytest.raises(ringsync.MismatchError, match="larger than the tensor's 8 bytes"):
            dist.recv(torch.empty(2), 0, tag=1)
    dist.barrier()
    assert n >= 2


def test_bad_peers_and_tags_raise_at_the_call():
    n = dist.get_world_size()
    with pytest.raises((ringsync.InvalidArgument, ValueError, RuntimeError), match="dst|rank"):
        dist.send(torch.ones(1), n + 3)
    with pytest.raises(ringsync.InvalidArgument, match="tag -1 is outside MPI's range"):
        dist.group.WORLD.send([torch.ones(1)], 0, -1)


def test_a_silent_peer_is_timeout_error_naming_it():
    """A group with a 1 s deadline: rank 1 waits for a message rank 0 never sends."""
    n, rank = dist.get_world_size(), dist.get_rank()
    short = dist.new_group(backend="ringsync", timeout=datetime.timedelta(seconds=1))
    world = ringsync.Communicator()
    if rank == 1:
        start = time.monotonic()
        work = dist.irecv(torch.empty(4), 0, group=short)
        with pytest.raises(ringsync.TimeoutError, match=r"recv of torch.float32 x 4 from rank 0 \(tag 0\) timed out"):
            work.wait()
        assert 0.9 <= time.monotonic() - start <= 10.0
        with pytest.raises(ringsync.AbortedError, match="aborted"):
            dist.send(torch.ones(1), 0, group=short)
    world.barrier()
    dist.destroy_process_group(short)
    assert n >= 2
