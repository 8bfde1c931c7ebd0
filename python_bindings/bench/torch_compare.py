"""torch.distributed on "ringsync" against "gloo", in one run on the same ranks.

    mpirun -np 2 python python_bindings/bench/torch_compare.py [--json FILE] [--quick] [--parts LIST]
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
(4) dist.send / dist.recv from 8 B to 64 MiB (uint8) on each backend: a ping-pong between ranks 0
    and 1 (the others wait), interleaved per repetition; time = round trip / 2, the slowest of the
    two ranks, median over repetitions; GB/s = S/t; ratio = gloo time / ringsync.
(5) dist.all_to_all_single (float32, equal splits) with S bytes per rank in all, 8 B to 64 MiB;
    algbw = S/t, busbw = algbw * (n-1)/n (nccl-tests' all-to-all); ratio = gloo time / ringsync.
(6) dist.reduce_scatter_tensor (float32 sum) and dist.all_gather_into_tensor (float32), S = the
    whole array (every rank's input for reduce-scatter, the output for all-gather), 8 B to 64 MiB;
    algbw = S/t, busbw = algbw * (n-1)/n (nccl-tests); ratio = gloo time / ringsync.
(7) FSDP2 (fully_shard per layer) training steps on each backend: samples/s for the same
    communication-heavy MLP as (2), each step all-gathering the parameters and reduce-scattering
    the gradients.
--parts picks sections (default: allreduce,sendrecv,alltoall,ddp; also reducescatter, allgather,
fsdp). Rank 0 prints the tables;
--json writes them, and --combine prints the medians over launches.

The groups come from ringsync.torch.init_process_group(): ringsync's default group and a Gloo
group over the same ranks, rendezvousing through the TCPStore rank 0 serves (reachable across
hosts: bench/multihost_run.sh -- python3 python_bindings/bench/torch_compare.py ...).
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

import ringsync
import ringsync.torch

SIZES = [8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
# (name, hidden width, layers, samples per rank, ms each layer's backward holds without the CPU,
#  DDP bucket cap in MB: None for DDP's default)
MODELS = [("comm-heavy MLP 1024x4, batch 8/rank", 1024, 4, 8, 0, None),
          ("compute-heavier MLP 1024x4, batch 256/rank", 1024, 4, 256, 0, None),
          ("device-like backward: MLP 1024x4, batch 8/rank, 3 ms hold per layer, 4 MB buckets", 1024, 4, 8, 3, 4)]


def size_text(nbytes):
    nbytes = int(nbytes)  # a median over launches is a float
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def slowest(seconds, world):
    t = np.array([seconds])
    world.allreduce(t, op="max")
    return float(t[0])


def init():
    ringsync.torch.init_process_group()
    return {"gloo": dist.new_group(backend="gloo"), "ringsync": dist.group.WORLD}


def interleaved(groups, world, reps, run):
    """run(group) -> seconds, for each backend in turn (the order alternating), after a barrier;
    the slowest rank's time per repetition."""
    samples = {name: [] for name in groups}
    names = list(groups)
    for rep in range(reps):
        for name in names[rep % 2:] + names[:rep % 2]:
            world.barrier()
            samples[name].append(slowest(run(groups[name]), world))
    return samples


def repetitions(nbytes, quick):
    return (5 if quick else 21) if nbytes < (1 << 20) else (3 if quick else 7)


def iterations_for(nbytes):
    return max(2, min(200, (64 << 20) // max(nbytes, 1) // 8))


def timed(call, iterations):
    def run(group):
        start = time.perf_counter()
        for _ in range(iterations):
            call(group)
        return (time.perf_counter() - start) / iterations
    return run


def sweep_row(nbytes, samples, bus_factor, per_call=1.0):
    row = {"bytes": nbytes}
    for name, values in samples.items():
        t = statistics.median(values) * per_call
        row[name] = {"us": t * 1e6, "busbw": nbytes / t / 1e9 * bus_factor}
    row["ratio"] = row["gloo"]["us"] / row["ringsync"]["us"]
    return row


def allreduce_sweep(groups, world, quick):
    n = world.size
    rows = []
    for nbytes in SIZES:
        x = torch.zeros(max(nbytes // 4, 1))
        call = timed(lambda group: dist.all_reduce(x, group=group), iterations_for(nbytes))
        for group in groups.values():  # warm-up: connections, first touch
            call(group)
        rows.append(sweep_row(x.numel() * 4, interleaved(groups, world, repetitions(nbytes, quick), call),
                              2 * (n - 1) / n))
    return rows


def sendrecv_sweep(groups, world, quick):
    """Ping-pong between ranks 0 and 1: one message's time is half a round trip."""
    rank = world.rank
    rows = []
    for nbytes in SIZES:
        x = torch.zeros(nbytes, dtype=torch.uint8)

        def exchange(group):
            if rank == 0:
                dist.send(x, 1, group=group)
                dist.recv(x, 1, group=group)
            elif rank == 1:
                dist.recv(x, 0, group=group)
                dist.send(x, 0, group=group)

        call = timed(exchange, iterations_for(nbytes))
        for group in groups.values():
            call(group)
        rows.append(sweep_row(nbytes, interleaved(groups, world, repetitions(nbytes, quick), call), 1.0, 0.5))
    return rows


def blockwise_sweep(groups, world, quick, gather):
    """reduce_scatter_tensor (gather=False) or all_gather_into_tensor over a whole array of S bytes."""
    n = world.size
    rows = []
    for nbytes in SIZES:
        block = max(1, nbytes // 4 // n)
        whole, part = torch.zeros(block * n), torch.zeros(block)
        if gather:
            call = timed(lambda group: dist.all_gather_into_tensor(whole, part, group=group), iterations_for(nbytes))
        else:
            call = timed(lambda group: dist.reduce_scatter_tensor(part, whole, group=group), iterations_for(nbytes))
        for group in groups.values():
            call(group)
        rows.append(sweep_row(block * n * 4, interleaved(groups, world, repetitions(nbytes, quick), call), (n - 1) / n))
    return rows


def reducescatter_sweep(groups, world, quick):
    return blockwise_sweep(groups, world, quick, gather=False)


def allgather_sweep(groups, world, quick):
    return blockwise_sweep(groups, world, quick, gather=True)


def alltoall_sweep(groups, world, quick):
    n = world.size
    rows = []
    for nbytes in SIZES:
        count = max(n, nbytes // 4 // n * n)  # equal splits
        x, out = torch.zeros(count), torch.empty(count)
        call = timed(lambda group: dist.all_to_all_single(out, x, group=group), iterations_for(nbytes))
        for group in groups.values():
            call(group)
        rows.append(sweep_row(count * 4, interleaved(groups, world, repetitions(nbytes, quick), call), (n - 1) / n))
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


def fsdp_compare(groups, world, quick):
    """FSDP2 steps per second on each backend: every layer sharded over the group's ranks."""
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.device_mesh import DeviceMesh

    n = world.size
    name, width, layers, batch = "comm-heavy MLP 1024x4, batch 8/rank", 1024, 4, 8
    torch.set_num_threads(1)
    x, y = torch.randn(batch, width), torch.randn(batch, width)
    models = {}
    for backend, group in groups.items():
        model = mlp(width, layers)
        mesh = DeviceMesh.from_group(group, "cpu")
        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer, mesh=mesh)
        models[backend] = fully_shard(model, mesh=mesh)
    steps = 4 if quick else 10
    per = {backend: [] for backend in groups}
    for model in models.values():
        step_time(model, x, y, 2)  # warm-up
    for rep in range(3 if quick else 5):
        for backend in (list(groups) if rep % 2 == 0 else list(groups)[::-1]):
            world.barrier()
            per[backend].append(slowest(statistics.median(step_time(models[backend], x, y, steps)), world))
    row = {"model": name, "params": sum(p.numel() for p in mlp(width, layers).parameters()), "batch": batch * n}
    for backend, values in per.items():
        t = statistics.median(values)
        row[backend] = {"step_ms": t * 1e3, "samples_per_s": batch * n / t}
    row["ratio"] = row["ringsync"]["samples_per_s"] / row["gloo"]["samples_per_s"]
    return [row]


SWEEPS = {"allreduce": ("all_reduce, float32 sum", "busbw GB/s"),
          "reducescatter": ("reduce_scatter_tensor, float32 sum, size = the whole array", "busbw GB/s"),
          "allgather": ("all_gather_into_tensor, float32, size = the whole array", "busbw GB/s"),
          "sendrecv": ("send/recv ping-pong between ranks 0 and 1, uint8, half a round trip", "GB/s"),
          "alltoall": ("all_to_all_single, float32, equal splits, size = bytes per rank", "busbw GB/s")}


def print_sweep(result, key, suffix):
    title, bandwidth = SWEEPS[key]
    print(f"# torch.distributed {title}, {result['ranks']} ranks, slowest rank, median over repetitions{suffix}")
    print(f"| size | gloo us | gloo {bandwidth} | ringsync us | ringsync {bandwidth} | gloo time / ringsync |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in result[key]:
        print(f"| {size_text(r['bytes'])} | {r['gloo']['us']:.1f} | {r['gloo']['busbw']:.3f} | {r['ringsync']['us']:.1f} "
              f"| {r['ringsync']['busbw']:.3f} | {r['ratio']:.2f}x |")
    print()


def print_tables(result, launches=1):
    n = result["ranks"]
    suffix = f", medians of {launches} launches" if launches > 1 else ""
    for key in SWEEPS:
        if key in result:
            print_sweep(result, key, suffix)
    if "fsdp" in result:
        print(f"# FSDP2 training (fully_shard per layer), {n} ranks, SGD + MSE, samples/s{suffix}")
        print("| model | params | global batch | gloo samples/s | ringsync samples/s | ringsync/gloo |")
        print("|---|---:|---:|---:|---:|---:|")
        for r in result["fsdp"]:
            print(f"| {r['model']} | {r['params']} | {r['batch']} | {r['gloo']['samples_per_s']:.1f} | "
                  f"{r['ringsync']['samples_per_s']:.1f} | {r['ratio']:.2f}x |")
        print()
    if "ddp" not in result:
        return
    print(f"# DDP training, {n} ranks, SGD + MSE, samples/s (global batch / median step){suffix}")
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

    keys = [k for k in (*SWEEPS, "ddp", "fsdp") if k in runs[0]]
    merged = {"ranks": runs[0]["ranks"]}
    for key in keys:
        merged[key] = [med(list(rows)) for rows in zip(*(r[key] for r in runs))]
    print_tables(merged, len(runs))
    for key in keys:  # the spread: every launch's ratio
        per_row = [" ".join(f"{run[key][i]['ratio']:.2f}" for run in runs) for i in range(len(runs[0][key]))]
        print(f"# {key} ratios per launch (row by row): " + "; ".join(per_row))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file (rank 0)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    parser.add_argument("--combine", nargs="+", metavar="JSON", help="print the medians of earlier --json runs")
    parser.add_argument("--parts", default="allreduce,sendrecv,alltoall,ddp",
                        help="comma-separated sections to run: allreduce, sendrecv, alltoall, ddp, "
                             "reducescatter, allgather, fsdp")
    args = parser.parse_args()
    if args.combine:
        combine(args.combine)
        return
    groups = init()
    world = ringsync.Communicator()
    runs = {"allreduce": allreduce_sweep, "sendrecv": sendrecv_sweep, "alltoall": alltoall_sweep, "ddp": ddp_compare,
            "reducescatter": reducescatter_sweep, "allgather": allgather_sweep, "fsdp": fsdp_compare}
    result = {"ranks": world.size}
    for part in args.parts.split(","):
        if part not in runs:
            parser.error(f"--parts: unknown section {part!r} ({', '.join(runs)})")
        result[part] = runs[part](groups, world, args.quick)
    if world.rank == 0:
        print_tables(result)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(result, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
