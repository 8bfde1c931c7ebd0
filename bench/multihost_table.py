#!/usr/bin/env python3
"""The table of bench/multihost.sh: ringsync, Open MPI's default and Open MPI's HAN, per size.

    python3 bench/multihost_table.py --link 2gbit --ranks 4 --default d1.json ... --han h1.json ...

Medians over the launches of each kind (allreduce_perf --json files). ringsync's time and busbw
are the medians over every launch; "vs default" and "vs HAN" are medians of the per-launch ratios
(baseline time / ringsync time, both measured in the same launch: above 1 ringsync is faster).
The link rate is what one host may send (the tbf cap), in GB/s, beside busbw / link rate.
"""
import argparse
import json
import re
import statistics


def size_text(nbytes):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f"{nbytes >> shift} {unit}"
    return f"{nbytes} B"


def link_gbytes(rate):
    """tc's rate units (bit/s, decimal prefixes) to GB/s; None when uncapped."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not match:
        return None
    scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[match.group(2)]
    return float(match.group(1)) * scale / 8 / 1e9


def load(paths):
    return [json.load(open(path, encoding="utf-8")) for path in paths]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--link", default="uncapped")
    parser.add_argument("--ranks", type=int, required=True)
    parser.add_argument("--default", nargs="+", required=True)
    parser.add_argument("--han", nargs="+", required=True)
    args = parser.parse_args()
    default, han = load(args.default), load(args.han)
    link = link_gbytes(args.link)
    print(f"environment: {default[0].get('environment', '')}; settings: {default[0].get('settings', '')}")
    print()
    print("| size | ringsync time (us) | ringsync busbw (GB/s) | MPI default time (us) | MPI default busbw | "
          "MPI HAN time (us) | MPI HAN busbw | link (GB/s) | ringsync busbw / link | vs default | vs HAN |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for i, row in enumerate(default[0]["rows"]):
        ours = [run["rows"][i]["out_of_place"] for run in default + han]
        base_d = [run["rows"][i]["baseline"] for run in default]
        base_h = [run["rows"][i]["baseline"] for run in han]
        vs_d = [run["rows"][i]["baseline"]["time_us"] / run["rows"][i]["out_of_place"]["time_us"] for run in default]
        vs_h = [run["rows"][i]["baseline"]["time_us"] / run["rows"][i]["out_of_place"]["time_us"] for run in han]
        med = lambda rows, key: statistics.median(r[key] for r in rows)  # noqa: E731
        busbw = med(ours, "busbw")
        link_text = f"{link:.3f}" if link else "-"
        of_link = f"{busbw / link:.2f}" if link else "-"
        print(f"| {size_text(row['bytes'])} | {med(ours, 'time_us'):.1f} | {busbw:.3f} | "
              f"{med(base_d, 'time_us'):.1f} | {med(base_d, 'busbw'):.3f} | {med(base_h, 'time_us'):.1f} | "
              f"{med(base_h, 'busbw'):.3f} | {link_text} | {of_link} | {statistics.median(vs_d):.2f} | "
              f"{statistics.median(vs_h):.2f} |")


if __name__ == "__main__":
    main()
