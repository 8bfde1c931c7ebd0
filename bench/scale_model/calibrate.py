#!/usr/bin/env python3
"""Fits the scale model's parameters to what calibrate.sh measured on 2 simulated hosts and checks
the model against the other layouts.

  bench/scale_model/calibrate.py --data DIR [--selection build/bin/selection_table] [--rate 1gbit]
                                 [--update bench/scale_model/params.json]

Fitted on the 2 x 1 runs (each algorithm forced, at the cap): alpha, beta and the per-message
overhead, by least squares on log(time) (every size weighs alike, 8 B as 64 MiB). From one host: beta_shm (copy_bandwidth, median of 256 KiB-4 MiB),
alpha_shm (a 2-rank 8 B all-reduce: one shared-memory round) and gamma (the slope of 2-rank direct
all-reduces, less the copy): a CPU's rate, which the capped link hides between 2 hosts. Then, at the cap,
for 2 x 1, 4 x 1, 8 x 1 and 4 x 2: per size and algorithm, measured (median of the launches)
against predicted, the error, whether the model ranks the same algorithm fastest, and which binds
(the link or the cores: the ring capped against uncapped at 4-64 MiB). Which algorithm a run took
is what selection_table says for its RINGSYNC_ALGO (a forced algorithm that cannot carry a size
falls back), never assumed. --update writes the fitted values into params.json as
calibrated_<rate>, with where and when they come from.
"""
from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costs  # noqa: E402
import selection  # noqa: E402

FIT_LAYOUT = "2x1"
CHECK_LAYOUTS = ("2x1", "4x1", "8x1", "4x2")
FORCED = ("ring", "recursive_doubling", "direct", "hierarchical", "rabenseifner")


def link_bytes_per_second(rate: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmg]?)bit", rate.lower())
    if not m:
        raise ValueError(f"--rate {rate}: expected tc's units, e.g. 1gbit or 500mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8


def human(n: int) -> str:
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


# ---- what was measured ------------------------------------------------------------------------------

def load_runs(data: str) -> dict:
    """{(layout, label, link): {bytes: [seconds of every launch]}} (out-of-place times)."""
    runs = {}
    for path in glob.glob(os.path.join(data, "*x*", "*.json")):
        layout = os.path.basename(os.path.dirname(path))
        label, link = os.path.basename(path).split(".")[:2]
        with open(path) as f:
            report = json.load(f)
        for row in report["rows"]:
            runs.setdefault((layout, label, link), {}).setdefault(row["bytes"], []).append(
                row["out_of_place"]["time_us"] * 1e-6)
    return runs


def medians(runs: dict) -> dict:
    return {key: {s: statistics.median(v) for s, v in by_size.items()} for key, by_size in runs.items()}


def taken(binary: str, layout: str, label: str) -> dict:
    """{bytes: algorithm} that a run of this label takes (selection_table under its RINGSYNC_ALGO)."""
    hosts, ranks = (int(x) for x in layout.split("x"))
    env = {} if label == "auto" else {"RINGSYNC_ALGO": label}
    text = selection.run_table_env(binary, env, [hosts], [ranks], 8, 64 << 20)
    return {s: a for (_, _, s), (a, _) in selection.parse_table(text).items()}


def one_host(data: str) -> tuple:
    """(alpha_shm, beta_shm, gamma) from the one-host runs: the copy rate (median of 256 KiB-4 MiB),
    one shared-memory round (2 ranks, 8 B), and the slope of the 2-rank direct round over S
    (copy S into the slot, reduce 2 x S: beta_shm + gamma per byte) less the copy."""
    rates = []
    with open(os.path.join(data, "copy_bandwidth.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and parts[0].isdigit() and 256 * 1024 <= int(parts[0]) <= 4 * 1024 * 1024:
                rates.append(float(parts[1]) * 1e9)
    beta_shm = 1 / statistics.median(rates)
    with open(os.path.join(data, "one_host_np2.json")) as f:
        round_s = json.load(f)["rows"][0]["out_of_place"]["time_us"] * 1e-6
    with open(os.path.join(data, "one_host_direct.json")) as f:
        rows = [(r["bytes"], r["out_of_place"]["time_us"] * 1e-6) for r in json.load(f)["rows"]]
    mean_s = statistics.fmean(s for s, _ in rows)
    mean_t = statistics.fmean(t for _, t in rows)
    slope = sum((s - mean_s) * (t - mean_t) for s, t in rows) / sum((s - mean_s) ** 2 for s, _ in rows)
    return round_s, beta_shm, max(slope - beta_shm, 1e-13)


# ---- the fit ------------------------------------------------------------------------------------------

def fitted_names(fixed: dict) -> list:
    """The parameters the fit moves: alpha, beta, and the overhead unless --overhead fixed it."""
    return ["alpha", "beta"] + ([] if "overhead" in fixed else ["overhead"])


def params_from(x, fixed: dict) -> costs.Params:
    v = dict(zip(fitted_names(fixed), (math.exp(t) for t in x)))
    v.update(fixed)
    return costs.Params(**v)


def fit_points(runs: dict, binary: str) -> list:
    """(algorithm, bytes, measured seconds) of the 2 x 1 forced runs at the cap."""
    points = []
    for (layout, label, link), by_size in runs.items():
        if layout != FIT_LAYOUT or label not in FORCED or link != "capped":
            continue
        algorithms = taken(binary, layout, label)
        points += [(algorithms[s], s, t) for s, t in by_size.items() if algorithms.get(s) == label]
    return points


def residuals(x, points, fixed) -> float:
    total = 0.0
    p = params_from(x, fixed)
    for algorithm, s, t in points:
        total += math.log(costs.TIME[algorithm](2, 1, s, p) / t) ** 2
    return total


def nelder_mead(f, x0, step=0.7, iterations=3000, tolerance=1e-10):
    """Minimises f from x0 (the simplex method; numpy/scipy-free so it runs wherever Python does)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iterations):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tolerance:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (x - b) for b, x in zip(best, s)] for s in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    i = min(range(n + 1), key=values.__getitem__)
    return simplex[i], values[i]


def fit(runs, binary, fixed, link_rate):
    points = fit_points(runs, binary)
    if not points:
        raise SystemExit(f"calibrate.py: no {FIT_LAYOUT} runs of a forced algorithm in the data")
    start = {"alpha": 30e-6, "beta": 1 / link_rate, "overhead": 2e-6}
    x0 = [math.log(start[k]) for k in fitted_names(fixed)]
    best, value = x0, math.inf
    for _ in range(4):  # restarted from the last optimum: the simplex may stall
        x, value_now = nelder_mead(lambda x: residuals(x, points, fixed), best)
        if value_now >= value - 1e-9:
            break
        best, value = x, value_now
    rms = math.sqrt(value / len(points))
    return dict(zip(fitted_names(fixed), (math.exp(t) for t in best))), points, rms


# ---- the check ----------------------------------------------------------------------------------------

def check_tables(med: dict, binary: str, p: costs.Params) -> tuple:
    lines, errors, agree, total = [], [], 0, 0
    for layout in CHECK_LAYOUTS:
        hosts, ranks = (int(x) for x in layout.split("x"))
        labels = [lab for lab in ("auto",) + FORCED if (layout, lab, "capped") in med]
        if not labels:
            continue
        algos = {lab: taken(binary, layout, lab) for lab in labels}
        all_sizes = sorted({s for lab in labels for s in med[(layout, lab, "capped")]})
        lines += [f"### {hosts} hosts x {ranks} rank(s), capped", "",
                  "| size | " + " | ".join(f"{lab}: measured / predicted us (error)" for lab in labels)
                  + " | fastest measured / predicted |", "|---:|" + "---|" * (len(labels) + 1)]
        for s in all_sizes:
            cells, measured, predicted = [], {}, {}
            for lab in labels:
                t = med[(layout, lab, "capped")].get(s)
                a = algos[lab].get(s)
                if t is None or a is None or (lab != "auto" and a != lab):
                    cells.append("")  # not run, or the forced algorithm fell back: that is another's point
                    continue
                pred = costs.TIME[a](hosts, ranks, s, p)
                err = (pred - t) / t
                errors.append((layout, s, lab, err))
                cells.append(f"{t * 1e6:.0f} / {pred * 1e6:.0f} ({err * 100:+.0f}%)" + (f" [{a}]" if lab == "auto" else ""))
                if lab != "auto":
                    measured[lab], predicted[lab] = t, pred
            verdict = ""
            if len(measured) >= 2:
                m_best, p_best = min(measured, key=measured.get), min(predicted, key=predicted.get)
                total += 1
                agree += m_best == p_best
                verdict = f"{m_best} / {p_best}" + ("" if m_best == p_best else " **differ**")
            lines.append(f"| {human(s)} | " + " | ".join(cells) + f" | {verdict} |")
        lines.append("")
    return lines, errors, agree, total


def what_binds(med: dict, link_rate: float) -> list:
    lines = ["### What binds: the ring capped against uncapped (4-64 MiB)", "",
             "| layout | size | capped us | uncapped us | uncapped faster by | capped busbw / link | binds |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for layout in CHECK_LAYOUTS:
        capped, free = med.get((layout, "ring", "capped"), {}), med.get((layout, "ring", "uncapped"), {})
        hosts, ranks = (int(x) for x in layout.split("x"))
        n = hosts * ranks
        for s in sorted(set(capped) & set(free)):
            if s < 1 << 20:
                continue
            busbw = s / capped[s] * 2 * (n - 1) / n
            # the flat ring's slowest edge carries 2(n-1)/n·S each way: busbw at the link's rate when it binds
            speedup = capped[s] / free[s]
            if speedup < 1.5:
                binds = "cores (lower the rate)"
            else:
                binds = "link" if busbw / link_rate >= 0.7 else "neither at its bound (noise?)"
            lines.append(f"| {layout} | {human(s)} | {capped[s] * 1e6:.0f} | {free[s] * 1e6:.0f} | {speedup:.2f}x | "
                         f"{busbw / link_rate:.2f} | {binds} |")
    return lines + [""]


def error_summary(errors) -> list:
    lines = ["### Prediction error by size (all check layouts and algorithms; |error|)", "",
             "| size | points | median | worst |", "|---:|---:|---:|---:|"]
    for s in sorted({e[1] for e in errors}):
        mine = [abs(e[3]) for e in errors if e[1] == s]
        lines.append(f"| {human(s)} | {len(mine)} | {statistics.median(mine) * 100:.0f}% | {max(mine) * 100:.0f}% |")
    big = [abs(e[3]) for e in errors if e[1] >= 64 * 1024]
    if big:
        within = sum(e <= 0.25 for e in big)
        lines += ["", f"From 64 KiB up: {within} of {len(big)} points within 25% (target: all)."]
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="calibrate.sh's --out")
    ap.add_argument("--selection", default=selection.default_binary())
    ap.add_argument("--rate", default="1gbit")
    ap.add_argument("--update", help="params.json to write the fitted values into (as calibrated_<rate>)")
    ap.add_argument("--overhead", type=float, help="fix the per-message overhead (seconds) instead of fitting it: "
                    "between 2 hosts it trades against alpha when the small sizes are noisy")
    args = ap.parse_args()
    link_rate = link_bytes_per_second(args.rate)
    alpha_shm, beta_shm, gamma = one_host(args.data)
    fixed = {"alpha_shm": alpha_shm, "beta_shm": beta_shm, "gamma": gamma}
    if args.overhead is not None:
        fixed["overhead"] = args.overhead
    med = medians(load_runs(args.data))
    fitted, points, rms = fit(med, args.selection, fixed, link_rate)
    values = dict(fixed, **fitted)
    p = costs.Params(name=f"calibrated_{args.rate}",
                     **{k: values[k] for k in ("alpha", "beta", "gamma", "alpha_shm", "beta_shm", "overhead")})
    with open(os.path.join(args.data, "machine.txt")) as f:
        machine = f.read().strip().replace("\n", "; ")
    out = [f"## Calibration ({args.data}; {machine})", "",
           f"Fitted on {len(points)} points of {FIT_LAYOUT} (rms of log error {rms:.3f}): "
           f"alpha {p.alpha * 1e6:.1f} us, beta {p.beta * 1e9:.3f} ns/B "
           f"({1 / p.beta / 1e6:.1f} MB/s; the cap is {link_rate / 1e6:.1f} MB/s), "
           f"overhead {p.overhead * 1e6:.2f} us/message"
           f"{' (fixed by --overhead)' if args.overhead is not None else ''}; from one host: gamma "
           f"{p.gamma * 1e9:.3f} ns/B, alpha_shm {alpha_shm * 1e6:.2f} us, beta_shm {beta_shm * 1e9:.3f} ns/B.", ""]
    lines, errors, agree, total = check_tables(med, args.selection, p)
    out += lines + what_binds(med, link_rate) + error_summary(errors)
    if total:
        out.append(f"Fastest algorithm the same, measured and predicted: {agree} of {total} points "
                   f"({agree / total * 100:.0f}%; target >= 80%).")
    text = "\n".join(out)
    print(text)
    with open(os.path.join(args.data, "calibration.md"), "w") as f:
        f.write(text + "\n")
    fitted_entry = {k: getattr(p, k) for k in ("alpha", "beta", "gamma", "alpha_shm", "beta_shm", "overhead")}
    fitted_entry["source"] = f"calibrate.py on {args.data} ({machine})"
    with open(os.path.join(args.data, "params_fitted.json"), "w") as f:
        json.dump({p.name: fitted_entry}, f, indent=2)
    if args.update:
        with open(args.update) as f:
            params = json.load(f)
        params[p.name] = fitted_entry
        with open(args.update, "w") as f:
            json.dump(params, f, indent=2)
            f.write("\n")
        print(f"# wrote {p.name} into {args.update}")


if __name__ == "__main__":
    main()
