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
