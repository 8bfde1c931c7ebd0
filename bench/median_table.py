#!/usr/bin/env python3
"""Medians over several `allreduce_perf --json` launches of the same sweep.

    python3 bench/median_table.py run1.json run2.json ... [--bound BOUND.txt] [--json-out median.json]

Prints a Markdown table per size (ringsync and baseline time as median [min-max] over the launches,
busbw, the median [min-max] of the per-launch ratios, the ratios themselves, and % of a
memory-traffic bound if given as lines "bytes busbw").
--json-out writes the medians in allreduce_perf's JSON shape, so bench/plot.py can draw them.
The ratio is taken within each launch (both sides measured in the same run), then the median.
"""
import argparse
import copy
import json
import statistics


def size_text(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def values_of(rows, *path):
    values = []
    for row in rows:
        for key in path:
            row = row[key]
        values.append(row)
    return values


def median_of(rows, *path):
    return statistics.median(values_of(rows, *path))


def spread(values, digits=2):
    """median [min-max]: the launch-to-launch spread next to the median."""
    return f"{statistics.median(values):.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+")
    parser.add_argument("--bound", help="file of 'bytes busbw' lines: the memory-traffic bound per size")
    parser.add_argument("--json-out", help="write the medians as one allreduce_perf-shaped JSON file")
    args = parser.parse_args()

    runs = [json.load(open(path, encoding="utf-8")) for path in args.runs]
    bound = {}
    if args.bound:
        for line in open(args.bound, encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                nbytes, busbw = line.split()[:2]
                bound[int(nbytes)] = float(busbw)

    first = runs[0]
    has_baseline = all("baseline" in row for row in first["rows"])
    sets = first.get("buffer_sets", 1)  # --buffers; files written before it have none
    in_turn = f" ({sets} separately allocated pairs in turn)" if sets > 1 else ""
    print(f"{len(runs)} launches, {first['ranks']} ranks, backend {first['backend']}, "
          f"{first.get('buffers', 'host')} buffers{in_turn}, "
          f"baseline {first.get('baseline', 'none')}, environment: {first.get('environment', '')}")
    print()
    header = "| size | ringsync time (us), median [min-max] | ringsync busbw (GB/s) |"
    rule = "|---:|---:|---:|"
    if has_baseline:
        header += (f" {first['baseline']} time (us), median [min-max] | {first['baseline']} busbw (GB/s) |"
                   " ratio, median [min-max] | ratios |")
        rule += "---:|---:|---:|:---|"
    if bound:
        header += " % of bound |"
        rule += "---:|"
    print(header)
    print(rule)

    median_run = copy.deepcopy(first)
    for i, row in enumerate(first["rows"]):
        rows = [run["rows"][i] for run in runs]
        time_us = median_of(rows, "out_of_place", "time_us")
        busbw = median_of(rows, "out_of_place", "busbw")
        line = f"| {size_text(row['bytes'])} | {spread(values_of(rows, 'out_of_place', 'time_us'))} | {busbw:.2f} |"
        target = median_run["rows"][i]
        target["out_of_place"]["time_us"], target["out_of_place"]["busbw"] = time_us, busbw
        target["in_place"]["time_us"] = median_of(rows, "in_place", "time_us")
        target["in_place"]["busbw"] = median_of(rows, "in_place", "busbw")
        if has_baseline:
            base_time = median_of(rows, "baseline", "time_us")
            base_busbw = median_of(rows, "baseline", "busbw")
            ratios = [r["ratio"] for r in rows]
            target["baseline"]["time_us"], target["baseline"]["busbw"] = base_time, base_busbw
            target["ratio"] = statistics.median(ratios)
            line += (f" {spread(values_of(rows, 'baseline', 'time_us'))} | {base_busbw:.2f} | {spread(ratios)} | "
                     f"{' '.join(f'{r:.2f}' for r in ratios)} |")
        if bound:
            line += f" {100 * busbw / bound[row['bytes']]:.0f} % |" if row["bytes"] in bound else " |"
        print(line)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as handle:
            json.dump(median_run, handle, indent=1)


if __name__ == "__main__":
    main()
