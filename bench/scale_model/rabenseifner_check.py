#!/usr/bin/env python3
"""The tables of rabenseifner_check.sh: ringsync against Open MPI, and Rabenseifner's measured gain
over the previous selection against the model's prediction.

  python3 bench/scale_model/rabenseifner_check.py --data DIR --selection build/bin/selection_table
      [--hosts 8] [--ranks 1] [--set simulated_1gbit] [--params params.json]

DIR holds allreduce_perf --json files named <label>.<sweep>.<launch>.json (labels: default and han,
the automatic choice beside Open MPI's default and HAN; doubling, ring, hierarchical, rabenseifner,
each forced; round, the direct round at 4 B). Every figure is the out-of-place time; medians over the launches, the spread is the
lowest and highest launch.

1. ringsync (its automatic choice, in the default and the HAN launches) against the faster of Open
   MPI's default and HAN at each size: target >= 1.0x everywhere.
2. Wherever the selection now takes Rabenseifner: the previous selection's algorithm (before
   Rabenseifner: recursive doubling up to 64 KiB among more than two nodes, then the ring, or the
   hierarchical all-reduce on nodes of L >= 2 ranks), measured forced, against the automatic choice:
   the measured gain, and the gain the model predicts (costs.py, --set); target: at least half the
   predicted gain (gain - 1 >= (predicted - 1) / 2), never a loss.
3. What checking a call costs either way: a fingerprint round (measured) against the summaries the
   butterfly's messages carry (their bytes at the link's rate).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import costs  # noqa: E402
import selection  # noqa: E402

KIB = 1024
MEASURED_LABEL = {"recursive_doubling": "doubling", "ring": "ring", "hierarchical": "hierarchical",
                  "rabenseifner": "rabenseifner"}


def human(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def load(data: str) -> dict:
    """{label: {bytes: {"ours": {launch: seconds}, "mpi": {launch: seconds}}}}."""
    runs: dict = {}
    for path in sorted(glob.glob(os.path.join(data, "*.json"))):
        label, _, launch = os.path.basename(path).split(".")[:3]
        with open(path) as f:
            report = json.load(f)
        for row in report["rows"]:
            entry = runs.setdefault(label, {}).setdefault(row["bytes"], {"ours": {}, "mpi": {}})
            entry["ours"][int(launch)] = row["out_of_place"]["time_us"] * 1e-6
            if row.get("baseline"):
                entry["mpi"][int(launch)] = row["baseline"]["time_us"] * 1e-6
    return runs


def median(by_launch: dict) -> float:
    return statistics.median(by_launch.values())


def previous_choice(nodes: int, ranks_per_node: int, size: int) -> str:
    """ringsync's selection before Rabenseifner (4cd5054, src/algorithm_selection.cc)."""
    hierarchy = ranks_per_node > 1
    members = nodes if hierarchy else nodes * ranks_per_node
    limit = 64 * KIB if members > 2 else 512 * KIB if hierarchy else 160 * KIB
    if size <= min(limit, 4 << 20):
        return "recursive_doubling"
    return "hierarchical" if hierarchy else "ring"


def spread(values) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def against_mpi(runs: dict, chosen: dict) -> list:
    lines = ["### ringsync (automatic choice) against the faster of Open MPI's default and HAN", "",
             "| size | ringsync's algorithm | ringsync (us) | MPI default (us) | MPI HAN (us) | faster MPI / ringsync | "
             "launches (min-max) | >= 1.0 |", "|---:|---|---:|---:|---:|---:|---|---|"]
    for size in sorted(runs.get("default", {})):
        default, han = runs["default"][size], runs.get("han", {}).get(size)
        if han is None or not default["mpi"] or not han["mpi"]:
            continue
        ours = statistics.median(list(default["ours"].values()) + list(han["ours"].values()))
        mpi_default, mpi_han = median(default["mpi"]), median(han["mpi"])
        ratio = min(mpi_default, mpi_han) / ours
        launches = sorted(set(default["mpi"]) & set(han["mpi"]))
        per_launch = [min(default["mpi"][i], han["mpi"][i]) / statistics.median([default["ours"][i], han["ours"][i]])
                      for i in launches]
        lines.append(f"| {human(size)} | {chosen.get(size, '?')} | {ours * 1e6:.1f} | {mpi_default * 1e6:.1f} | "
                     f"{mpi_han * 1e6:.1f} | {ratio:.2f} | {spread(per_launch)} | {'yes' if ratio >= 1.0 else 'NO'} |")
    return lines + [""]


def gain_table(runs: dict, chosen: dict, nodes: int, ranks_per_node: int, prm) -> list:
    lines = [f"### Rabenseifner's gain over the previous selection, measured and predicted (`{prm.name}`)", "",
             "| size | previous | previous (us) | now (us) | measured gain | launches (min-max) | predicted gain | "
             "target (>= half, no loss) |", "|---:|---|---:|---:|---:|---|---:|---|"]
    for size in sorted(chosen):
        if chosen[size] != "rabenseifner":
            continue
        before = previous_choice(nodes, ranks_per_node, size)
        old = runs.get(MEASURED_LABEL[before], {}).get(size)
        now = [runs.get(label, {}).get(size, {"ours": {}})["ours"] for label in ("default", "han")]
        if not old or not now[0]:
            continue
        now_median = statistics.median(list(now[0].values()) + list(now[1].values()))
        gain = median(old["ours"]) / now_median
        per_launch = [old["ours"][i] / statistics.median([n[i] for n in now if i in n])
                      for i in sorted(old["ours"]) if i in now[0]]
        predicted = costs.TIME[before](nodes, ranks_per_node, size, prm) / costs.TIME["rabenseifner"](
            nodes, ranks_per_node, size, prm)
        met = gain >= 1.0 and gain - 1 >= (predicted - 1) / 2
        lines.append(f"| {human(size)} | {before} | {median(old['ours']) * 1e6:.1f} | "
                     f"{now_median * 1e6:.1f} | {gain:.2f} | {spread(per_launch)} | {predicted:.2f} | "
                     f"{'yes' if met else 'NO'} |")
    return lines + [""]


def check_cost(runs: dict, members: int, rate: str) -> list:
    """A fingerprint round (the direct round at 4 B) against the summaries on the butterfly's
    critical path: 2(q+e) messages of h more bytes each at the link's rate."""
    rounds = list(runs.get("round", {}).get(4, {"ours": {}})["ours"].values())
    if not rounds:
        return []
    q = members.bit_length() - 1
    e = int(members > 1 << q)
    link = rate_bytes_per_second(rate)
    summaries = 2 * (q + e) * costs.DOUBLING_PREFIX / link if link else None
    text = f"{summaries * 1e6:.1f} us" if summaries else "(uncapped: not computed)"
    return ["### Checking the call: a fingerprint round, or the summaries on the messages", "",
            f"A fingerprint round (the direct round at 4 B, {members} ranks): median {statistics.median(rounds) * 1e6:.1f} us "
            f"(launches {min(rounds) * 1e6:.1f}-{max(rounds) * 1e6:.1f}); the summaries on the butterfly's 2(q+e) = "
            f"{2 * (q + e)} messages of its critical path, {costs.DOUBLING_PREFIX} B each at {rate}: {text}.", ""]


def rate_bytes_per_second(rate: str):
    units = {"kbit": 1e3 / 8, "mbit": 1e6 / 8, "gbit": 1e9 / 8}
    for unit, scale in units.items():
        if rate.lower().endswith(unit):
            return float(rate[: -len(unit)]) * scale
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--selection", default=selection.default_binary())
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--ranks", type=int, default=1)
    parser.add_argument("--params", default=os.path.join(HERE, "params.json"))
    parser.add_argument("--set", default="simulated_1gbit")
    parser.add_argument("--rate", default="1gbit", help="the link cap the runs had (tc units), or 'uncapped'")
    args = parser.parse_args()
    runs = load(args.data)
    if not runs:
        raise SystemExit(f"rabenseifner_check.py: no allreduce_perf JSON in {args.data}")
    sizes = sorted({s for by_size in runs.values() for s in by_size})
    table = selection.parse_table(selection.run_table_env(args.selection, {}, [args.hosts], [args.ranks], sizes[0],
                                                          sizes[-1]))
    chosen = {s: table[(args.hosts, args.ranks, s)][0] for s in sizes if (args.hosts, args.ranks, s) in table}
    prm = costs.Params.load(args.params, args.set)
    launches = len(glob.glob(os.path.join(args.data, "default.small.*.json")))
    print(f"## {args.hosts} hosts x {args.ranks} rank(s), link {args.rate}: {launches} launch(es) per configuration\n")
    members = args.hosts if args.ranks > 1 else args.hosts * args.ranks
    print("\n".join(against_mpi(runs, chosen) + gain_table(runs, chosen, args.hosts, args.ranks, prm) +
                    check_cost(runs, members, args.rate)))


if __name__ == "__main__":
    main()
