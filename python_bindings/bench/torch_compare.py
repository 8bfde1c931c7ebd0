"""torch.distributed on "ringsync" against "gloo", in one run on the same ranks.

    mpirun -np 2 python python_bindings/bench/torch_compare.py [--json FILE] [--quick]
    python python_bindings/bench/torch_compare.py --combine run1.json run2.json run3.json

(1) dist.all_reduce (float32 sum, synchronous) from 8 B to 64 MiB on each backend, the two
    interleaved per repetition after a barrier; the slowest rank's time per call, median over the
    repetitions; algbw = S/t, busbw = algbw * 2(n-1)/n (nccl-tests); ratio = gloo time / ringsync.
(2) DDP training steps (SGD, MSE loss) per second x global batch = samples/s on each backend,
    for a communication-heavy model (wide MLP, small batch: the all-reduce is most of a step on
    gloo), a compute-heavier one (same layers, large batch), and one whose backward is mostly
    device-like: each layer's backward also holds for a few ms without using the CPU (as a GPU's
    backward leaves the CPU free), with one DDP bucket per layer. The same rank runs both backends
    alternately, so both see the same machine load.
(3) Overlap on "ringsync": the DDP step against a step with no communication and the synchronous
    all-reduce of all its gradients: hidden = (compute + all-reduce - step) / all-reduce, the
    share of the all-reduce that ran during backward. Two baselines for "compute": the same model
    without DDP (DDP's own bucket copies then count against the overlap), and DDP with a comm hook
    that communicates nothing (the same buckets and copies; only the all-reduce is missing).
Rank 0 prints the tables; --json writes them, and --combine prints the medians over launches.

Across hosts (bench/multihost_run.sh -- python3 python_bindings/bench/torch_compare.py ...), the
rendezvous store is on rank 0's host address; on one host on 127.0.0.1.
"""

import argparse
import json
import socket
import statistics
import time
import zlib

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ringsync
import ringsync.torch  # noqa: F401 - registers backend "ringsync"

SIZES = [8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
# (name, hidden width, layers, samples per rank, ms each layer's backward holds without the CPU,
#  DDP bucket cap in MB: None for DDP's default)
MODELS = [("comm-heavy MLP 1024x4, batch 8/rank", 1024, 4, 8, 0, None),
          ("compute-heavier MLP 1024x4, batch 256/rank", 1024, 4, 256, 0, None),
          ("device-like backward: MLP 1024x4, batch 8/rank, 3 ms hold per layer, 4 MB buckets", 1024, 4, 8, 3, 4)]


def size_text(nbytes):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def slowest(seconds, world):
    t = np.array([seconds])
    world.allreduce(t, op="max")
    return float(t[0])


def store_address(world):
    """127.0.0.1 when every rank runs on one host, else rank 0's host address (IPv4)."""
    name = np.array([zlib.crc32(socket.gethostname().encode())], dtype=np.int64)
    low, high = name.copy(), name.copy()
    world.allreduce(low, op="min")
    world.allreduce(high, op="max")
    address = np.zeros(4, dtype=np.int64)
    if world.rank == 0:
        host = "127.0.0.1" if low[0] == high[0] else socket.gethostbyname(socket.gethostname())
        address[:] = [int(part) for part in host.split(".")]
    world.broadcast(address, root=0)
    return ".".join(str(int(part)) for part in address)


def init(world):
    host = store_address(world)
    port = np.array([0], dtype=np.int64)
    if world.rank == 0:
        with socket.socket() as s:
            s.bind((host, 0))
            port[0] = s.getsockname()[1]
    world.broadcast(port, root=0)
    dist.init_process_group("ringsync", init_method=f"tcp://{host}:{int(port[0])}", rank=world.rank,
                            world_size=world.size)
    return {"gloo": dist.new_group(backend="gloo"), "ringsync": dist.group.WORLD}


def allreduce_sweep(groups, world, quick):
    n = world.size
    rows = []
    for nbytes in SIZES:
        x = torch.zeros(max(nbytes // 4, 1))
        iterations = max(2, min(200, (64 << 20) // nbytes // 8))
        reps = (5 if quick else 21) if nbytes < (1 << 20) else (3 if quick else 7)
        samples = {name: [] for name in groups}
        for name, group in groups.items():  # warm-up: connections, first touch
            for _ in range(2):
                dist.all_reduce(x, group=group)
        names = list(groups)
        for rep in range(reps):
            for name in names[rep % 2:] + names[:rep % 2]:
                world.barrier()
                start = time.perf_counter()
                for _ in range(iterations):
                    dist.all_reduce(x, group=groups[name])
                samples[name].append(slowest(time.perf_counter() - start, world) / iterations)
        row = {"bytes": x.numel() * 4}
        for name, values in samples.items():
            t = statistics.median(values)
            row[name] = {"us": t * 1e6, "busbw": x.numel() * 4 / t / 1e9 * 2 * (n - 1) / n}
        row["ratio"] = row["gloo"]["us"] / row["ringsync"]["us"]
        rows.append(row)
    return rows


class HoldInBackward(torch.autograd.Function):
    """Identity whose backward sleeps: device time during which the CPU is free (a GPU's backward)."""

    @staticmethod
    def forward(ctx, x, seconds):
        ctx.seconds = seconds
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        time.sleep(ctx.seconds)
        return grad, None


class Hold(nn.Module):
    def __init__(self, ms):
        super().__init__()
        self.seconds = ms / 1e3

    def forward(self, x):
        return HoldInBackward.apply(x, self.seconds)


def mlp(width, layers, hold_ms=0):
    torch.manual_seed(0)
    parts = []
    for _ in range(layers):
        parts += [nn.Linear(width, width)] + ([Hold(hold_ms)] if hold_ms else []) + [nn.ReLU()]
    return nn.Sequential(*parts[:-1])


def step_time(model, x, y, steps):
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return times


def _no_communication(_state, bucket):
    """A DDP comm hook that leaves every bucket as it is: DDP's step without the all-reduce."""
    future = torch.futures.Future()
    future.set_result(bucket.buffer())
    return future


def ddp_compare(groups, world, quick):
    n = world.size
    rows = []
    torch.set_num_threads(1)  # one core per rank (2 ranks on 2 cores), the same for both backends
    for name, width, layers, batch, hold_ms, bucket_mb in MODELS:
        x, y = torch.randn(batch, width), torch.randn(batch, width)
        ddp_args = {} if bucket_mb is None else {"bucket_cap_mb": bucket_mb}
        models = {backend: DDP(mlp(width, layers, hold_ms), process_group=group, **ddp_args)
                  for backend, group in groups.items()}
        steps = 4 if quick else 10
        per = {backend: [] for backend in groups}
        for backend, model in models.items():
            step_time(model, x, y, 2)  # warm-up
        for rep in range(3 if quick else 5):
            for backend in (list(groups) if rep % 2 == 0 else list(groups)[::-1]):
                world.barrier()
                times = step_time(models[backend], x, y, steps)
                per[backend].append(slowest(statistics.median(times), world))
        row = {"model": name, "params": sum(p.numel() for p in models["gloo"].parameters()), "batch": batch * n}
        for backend, values in per.items():
            t = statistics.median(values)
            row[backend] = {"step_ms": t * 1e3, "samples_per_s": batch * n / t}
        row["ratio"] = row["ringsync"]["samples_per_s"] / row["gloo"]["samples_per_s"]
        # (3) the overlap on ringsync: no-communication step, and the all-reduce of all gradients.
        alone = statistics.median(step_time(mlp(width, layers, hold_ms), x, y, steps))
        silent = DDP(mlp(width, layers, hold_ms), process_group=groups["ringsync"], **ddp_args)
        silent.register_comm_hook(None, _no_communication)
        step_time(silent, x, y, 2)  # warm-up
        ddp_alone = statistics.median(step_time(silent, x, y, steps))
        grads = torch.zeros(row["params"])
        world.barrier()
        start = time.perf_counter()
        for _ in range(3):
            dist.all_reduce(grads)
        comm = slowest((time.perf_counter() - start) / 3, world)
        step = row["ringsync"]["step_ms"] / 1e3
        row["overlap"] = {"compute_ms": alone * 1e3, "allreduce_ms": comm * 1e3,
                          "hidden": max(0.0, (alone + comm - step) / comm),
                          "ddp_compute_ms": ddp_alone * 1e3,
                          "ddp_hidden": max(0.0, (ddp_alone + comm - step) / comm)}
        rows.append(row)
        del models
    return rows


def print_tables(result, launches=1):
    n = result["ranks"]
    suffix = f", medians of {launches} launches" if launches > 1 else ""
    print(f"# torch.distributed all_reduce, float32 sum, {n} ranks, slowest rank, median over repetitions{suffix}")
    print("| size | gloo us | gloo busbw GB/s | ringsync us | ringsync busbw GB/s | ringsync/gloo |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in result["allreduce"]:
        print(f"| {size_text(r['bytes'])} | {r['gloo']['us']:.1f} | {r['gloo']['busbw']:.3f} | {r['ringsync']['us']:.1f} "
              f"| {r['ringsync']['busbw']:.3f} | {r['ratio']:.2f}x |")
    print(f"\n# DDP training, {n} ranks, SGD + MSE, samples/s (global batch / median step){suffix}")
    print("| model | params | global batch | gloo samples/s | ringsync samples/s | ringsync/gloo | "
          "no-comm step ms | all-reduce ms | ringsync step ms | all-reduce hidden | "
          "DDP no-comm step ms | hidden vs DDP no-comm |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in result["ddp"]:
        o = r["overlap"]
        print(f"| {r['model']} | {r['params']} | {r['batch']} | {r['gloo']['samples_per_s']:.1f} | "
              f"{r['ringsync']['samples_per_s']:.1f} | {r['ratio']:.2f}x | {o['compute_ms']:.1f} | "
              f"{o['allreduce_ms']:.1f} | {r['ringsync']['step_ms']:.1f} | {o['hidden'] * 100:.0f}% | "
              f"{o.get('ddp_compute_ms', float('nan')):.1f} | {o.get('ddp_hidden', float('nan')) * 100:.0f}% |")


def combine(paths):
    """Medians over launches of every figure (ratios: the median of the per-launch ratios)."""
    runs = [json.load(open(p, encoding="utf-8")) for p in paths]

    def med(values):
        if isinstance(values[0], dict):
            return {k: med([v[k] for v in values]) for k in values[0]}
        if isinstance(values[0], (int, float)):
            return statistics.median(values)
        return values[0]

    merged = {"ranks": runs[0]["ranks"],
              "allreduce": [med(list(rows)) for rows in zip(*(r["allreduce"] for r in runs))],
              "ddp": [med(list(rows)) for rows in zip(*(r["ddp"] for r in runs))]}
    print_tables(merged, len(runs))
    for key, label in (("allreduce", "all-reduce ratios per launch"), ("ddp", "DDP ratios per launch")):
        per_row = [" ".join(f"{run[key][i]['ratio']:.2f}" for run in runs) for i in range(len(runs[0][key]))]
        print(f"# {label} (row by row): " + "; ".join(per_row))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--combine", nargs="+", metavar="JSON", help="print the medians of earlier --json runs")
    args = parser.parse_args()
    if args.combine:
        combine(args.combine)
        return
    world = ringsync.Communicator()
    groups = init(world)
    result = {"ranks": world.size, "allreduce": allreduce_sweep(groups, world, args.quick),
              "ddp": ddp_compare(groups, world, args.quick)}
    if world.rank == 0:
        print_tables(result)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
