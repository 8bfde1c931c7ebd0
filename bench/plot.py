#!/usr/bin/env python3
"""Plot bench results: bus bandwidth and latency against message size, one line per backend.

    mpirun -np 2 build/bin/allreduce_perf -b 8 -e 256M -f 4 --compare mpi --json np2.json
    python3 bench/plot.py np2.json [np4.json ...] -o allreduce.png

Each --json file gives one line for ringsync (its backend, out-of-place) and, when it was run with
--compare, one for the baseline measured in the same run (MPI's collective, or RINGSYNC_CHECK=0).
Both axes are logarithmic.
"""
import argparse
import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not data.get("rows"):
        raise SystemExit(f"{path}: no rows (was the sweep empty?)")
    return data


def series(data, label_suffix):
    """(label, sizes, busbw, latency_us, is_baseline) for ringsync and, if present, the baseline."""
    rows = data["rows"]
    sizes = [row["bytes"] for row in rows]
    name = f"ringsync {data['backend']}{label_suffix}"
    lines = [(name, sizes, [r["out_of_place"]["busbw"] for r in rows], [r["out_of_place"]["time_us"] for r in rows],
              False)]
    if all("baseline" in row for row in rows):
        lines.append((f"{data['baseline']}{label_suffix}", sizes, [r["baseline"]["busbw"] for r in rows],
                      [r["baseline"]["time_us"] for r in rows], True))
    return lines


def suffix_for(data, path, files):
    """Tell files apart in the legend: ranks, and the file name when ranks alone do not."""
    ranks = {d["ranks"] for d, _ in files}
    if len(files) == 1:
        return f" (np={data['ranks']})"
    if len(ranks) == len(files):
        return f" (np={data['ranks']})"
    return f" (np={data['ranks']}, {path})"


def plot(files, output, title):
    figure, (bandwidth, latency) = plt.subplots(1, 2, figsize=(13, 5))
    for data, path in files:
        for label, sizes, busbw, time_us, baseline in series(data, suffix_for(data, path, files)):
            style = "--" if baseline else "-"
            bandwidth.plot(sizes, busbw, style, marker="o", markersize=3, label=label)
            latency.plot(sizes, time_us, style, marker="o", markersize=3, label=label)
    for axis, ylabel in ((bandwidth, "bus bandwidth (GB/s)"), (latency, "time per call (us)")):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("message size (bytes)")
        axis.set_ylabel(ylabel)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=8)
    first = files[0][0]
    figure.suptitle(title or f"{first['collective']} {first['type']} {first['op']}, {first['buffers']} buffers")
    figure.tight_layout()
    figure.savefig(output, dpi=120)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="+", help="files written by allreduce_perf/broadcast_perf --json")
    parser.add_argument("-o", "--output", default="bench.png", help="PNG to write (default bench.png)")
    parser.add_argument("--title", default="", help="figure title (default: collective, type, op)")
    args = parser.parse_args(argv)
    files = [(load(path), path) for path in args.json]
    plot(files, args.output, args.title)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main(sys.argv[1:])
