"""CUDA tensors go through ringsync's device path on the caller's current stream (GPU machines)."""

import pytest
import torch
import torch.distributed as dist

import ringsync

needs_gpu = pytest.mark.skipif(not torch.cuda.is_available() or not ringsync.with_cuda,
                               reason="SKIPPED: no CUDA device, or ringsync built without CUDA")


@needs_gpu
def test_cuda_all_reduce_broadcast_all_gather():
    n, rank = dist.get_world_size(), dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    x = torch.full((1000,), float(rank), device=device)
    dist.all_reduce(x)
    assert torch.equal(x.cpu(), torch.full((1000,), n * (n - 1) / 2))
    y = torch.full((10,), float(rank), device=device)
    dist.broadcast(y, src=n - 1)
    assert torch.equal(y.cpu(), torch.full((10,), float(n - 1)))
    out = torch.empty(n * 3, device=device)
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank), device=device))
    assert torch.equal(out.cpu(), torch.arange(n, dtype=torch.float32).repeat_interleave(3))


def test_a_cuda_tensor_without_a_cuda_build_is_refused_by_name():
    if ringsync.with_cuda or not torch.cuda.is_available():
        pytest.skip("SKIPPED: needs a CUDA device and a ringsync built without CUDA")
    with pytest.raises(ringsync.InvalidArgument, match="built without CUDA"):
        dist.all_reduce(torch.ones(2, device="cuda"))


@needs_gpu
def test_wait_makes_the_callers_current_stream_wait():
    """The collective runs on the stream current at the call (s1, held up by a 200 ms sleep kernel);
    the caller switches to s2 before wait(): work on s2 after wait() must come after the collective,
    as ProcessGroupNCCL's wait() orders it."""
    n, rank = dist.get_world_size(), dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    s1, s2 = torch.cuda.Stream(device), torch.cuda.Stream(device)
    x = torch.full((1 << 20,), float(rank), device=device)
    torch.cuda.synchronize(device)
    with torch.cuda.stream(s1):
        torch.cuda._sleep(int(2e8))  # ~0.1-0.2 s of GPU time on s1, before the collective
        work = dist.all_reduce(x, async_op=True)
    with torch.cuda.stream(s2):
        work.wait()
        y = x * 1  # on s2: reads the result only if s2 waits for the collective (s1 still sleeps)
    torch.cuda.synchronize(device)
    assert torch.equal(y.cpu(), torch.full((1 << 20,), n * (n - 1) / 2)), "s2 read x before the collective ended"



@needs_gpu
def test_cuda_point_to_point_and_all_to_all_through_host_copies():
    n, rank = dist.get_world_size(), dist.get_rank()
    device = torch.device("cuda", rank % torch.cuda.device_count())
    got = torch.empty(1000, device=device)
    sent = dist.isend(torch.full((1000,), float(rank), device=device), (rank + 1) % n)
    dist.recv(got, (rank - 1) % n)
    sent.wait()
    assert torch.equal(got.cpu(), torch.full((1000,), float((rank - 1) % n)))
    send = torch.arange(n * 2, dtype=torch.float32, device=device) + 100 * rank
    recv = torch.empty(n * 2, device=device)
    dist.all_to_all_single(recv, send)
    want = torch.tensor([100 * p + 2 * rank + k for p in range(n) for k in range(2)], dtype=torch.float32)
    assert torch.equal(recv.cpu(), want)
