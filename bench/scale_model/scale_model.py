#!/usr/bin/env python3
"""The scale model: for N = 2 ... 1,024 nodes x L ranks per node and 8 B - 64 MiB, the modelled time
of every host all-reduce ringsync has (costs.py) and of Rabenseifner and a double binary tree, the
best of each per point, ringsync's own choice (bench/selection_table, the real selection function)
and where that choice loses more than 10%. Writes a CSV of every point, a markdown summary and the
plots bench/figures/scale_*.png.

  bench/scale_model/scale_model.py [--params bench/scale_model/params.json] [--set NAME]
      [--selection build/bin/selection_table | table.csv] [--ranks-per-node 1,8] [--out DIR]
      [--figures bench/figures] [--no-plots] [--default-latency]

The selection is asked under RINGSYNC_NETWORK_LATENCY_BYTES = the set's (alpha + 2o)/beta and
RINGSYNC_REDUCE_TO_LINK_RATIO = its gamma/beta, as a user of that network would set them
(--default-latency: the library's defaults, the simulated hosts at 1 Gbit/s).
"""
from __future__ import annotations

import argparse
import csv
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costs  # noqa: E402
import selection  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = [2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1000, 1024]
MIN_BYTES, MAX_BYTES = 8, 64 * costs.MIB
LOSS = 1.10  # "loses more than 10%"

SHORT = {"direct": "D", "split": "S", "ring": "R", "hierarchical": "H", "recursive_doubling": "RD",
         "rabenseifner": "Rab", "tree": "T", "rd_sharded": "RDs"}
COLOUR = {"direct": "tab:gray", "split": "tab:olive", "ring": "tab:blue", "hierarchical": "tab:green",
          "recursive_doubling": "tab:orange", "rabenseifner": "tab:red", "tree": "tab:purple",
          "rd_sharded": "tab:brown"}


def sizes():
    s = MIN_BYTES
    while s <= MAX_BYTES:
        yield s
        s *= 2


def human(nbytes: float) -> str:
    for unit, scale in (("MiB", costs.MIB), ("KiB", costs.KIB)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{nbytes:.0f} B"


def evaluate(params: costs.Params, chosen: dict, nodes, ranks) -> list:
    """One row per (N, L, S): every algorithm's time, the bests, the selection's."""
    rows = []
    for L in ranks:
        for N in nodes:
            for S in sizes():
                t = costs.times(N, L, S, params)
                existing = {a: v for a, v in t.items() if a in costs.EXISTING}
                best_existing = min(existing, key=existing.get)
                best_all = min(t, key=t.get)
                algorithm, reason = chosen[(N, L, S)]
                if algorithm not in t:
                    raise ValueError(f"selection chose {algorithm} at N={N} L={L} S={S}, which the model says "
                                     "cannot run there (costs.available)")
                rows.append({"nodes": N, "ranks_per_node": L, "bytes": S, "selection": algorithm,
                             "selection_s": t[algorithm], "best_existing": best_existing,
                             "best_existing_s": t[best_existing], "best_all": best_all, "best_all_s": t[best_all],
                             "times": t, "reason": reason})
    return rows


def write_csv(rows, path):
    names = costs.EXISTING + costs.ADDED
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["nodes", "ranks_per_node", "bytes", "selection", "selection_us", "best_existing",
                    "best_existing_us", "best_all", "best_all_us"] + [f"{a}_us" for a in names])
        for r in rows:
            w.writerow([r["nodes"], r["ranks_per_node"], r["bytes"], r["selection"], f"{r['selection_s'] * 1e6:.3f}",
                        r["best_existing"], f"{r['best_existing_s'] * 1e6:.3f}", r["best_all"],
                        f"{r['best_all_s'] * 1e6:.3f}"]
                       + [f"{r['times'][a] * 1e6:.3f}" if a in r["times"] else "" for a in names])


def ranges(rows, key_best, key_time):
    """Runs of consecutive sizes where the selection is > 10% slower than row[key_best]:
    (first size, last size, worst factor, best algorithm at the worst point)."""
    out, run = [], None
    for r in rows:
        factor = r["selection_s"] / r[key_time]
        if factor > LOSS:
            if run is None:
                run = [r["bytes"], r["bytes"], factor, r[key_best]]
            else:
                run[1] = r["bytes"]
                if factor > run[2]:
                    run[2], run[3] = factor, r[key_best]
        elif run is not None:
            out.append(run)
            run = None
    if run is not None:
        out.append(run)
    return out


def summary(rows, params, nodes, ranks) -> str:
    lines = [f"## Model: parameters `{params.name}`",
             f"alpha {params.alpha * 1e6:.2f} us, beta {params.beta * 1e9:.3f} ns/B "
             f"({1 / params.beta / 1e9:.3f} GB/s), gamma {params.gamma * 1e9:.3f} ns/B, alpha_shm "
             f"{params.alpha_shm * 1e6:.2f} us, beta_shm {params.beta_shm * 1e9:.3f} ns/B, overhead "
             f"{params.overhead * 1e6:.2f} us/message", ""]
    for L in ranks:
        lines += [f"### {L} rank(s) per node: where ringsync's selection loses more than 10%", "",
                  "| N | against the best it has (sizes, worst factor, best there) "
                  "| against the best with Rabenseifner / tree / sharded RD (sizes, worst factor, best there) |",
                  "|---:|---|---|"]
        for N in nodes:
            mine = [r for r in rows if r["nodes"] == N and r["ranks_per_node"] == L]
            cells = []
            for key_best, key_time in (("best_existing", "best_existing_s"), ("best_all", "best_all_s")):
                found = ranges(mine, key_best, key_time)
                cells.append("; ".join(f"{human(a)}-{human(b)}: {f:.2f}x ({SHORT[w]})" for a, b, f, w in found)
                             or "none")
            lines.append(f"| {N} | {cells[0]} | {cells[1]} |")
        lines.append("")
    return "\n".join(lines)


def fmt_time(t: float) -> str:
    return f"{t * 1e3:.2f} ms" if t >= 1e-3 else f"{t * 1e6:.0f} us"


def headline(rows, ranks) -> str:
    """ringsync's choice against the best once Rabenseifner is there (no tree), at a few points."""
    lines = ["### Headline: ringsync's choice against the best with Rabenseifner (the tree left out)", "",
             "| N x L | size | ringsync's choice | best with Rabenseifner | gain | best with the tree too |",
             "|---|---:|---|---|---:|---|"]
    without_tree = costs.EXISTING + ("rabenseifner", "rd_sharded")
    for L in ranks:
        for N in (8, 64, 1024):
            for S in (4096, 65536, 1 << 20, 16 << 20):
                r = next(r for r in rows if (r["nodes"], r["ranks_per_node"], r["bytes"]) == (N, L, S))
                t = {a: v for a, v in r["times"].items() if a in without_tree}
                b = min(t, key=t.get)
                lines.append(f"| {N} x {L} | {human(S)} | {r['selection']} {fmt_time(r['selection_s'])} | {b} "
                             f"{fmt_time(t[b])} | {r['selection_s'] / t[b]:.2f}x | {r['best_all']} "
                             f"{fmt_time(r['best_all_s'])} |")
    return "\n".join(lines) + "\n"


def best_map(rows, L, nodes, key) -> str:
    """A compact table: per N, the best algorithm for each size (letters of SHORT)."""
    all_sizes = list(sizes())
    header = "| N | " + " | ".join(human(s).replace(" ", "") for s in all_sizes) + " |"
    lines = [header, "|---:|" + "---|" * len(all_sizes)]
    for N in nodes:
        mine = {r["bytes"]: r for r in rows if r["nodes"] == N and r["ranks_per_node"] == L}
        lines.append(f"| {N} | " + " | ".join(SHORT[mine[s][key]] for s in all_sizes) + " |")
    return "\n".join(lines)


def plot(rows, params, ranks, figures, tag):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [2, 8, 64, 1024]
    all_sizes = list(sizes())
    for L in ranks:
        fig, axes = plt.subplots(1, len(shown), figsize=(5 * len(shown), 4.6), sharey=False)
        for ax, N in zip(axes, shown):
            mine = {r["bytes"]: r for r in rows if r["nodes"] == N and r["ranks_per_node"] == L}
            for a in costs.EXISTING + costs.ADDED:
                xs = [s for s in all_sizes if a in mine[s]["times"]]
                if not xs:
                    continue
                ys = [mine[s]["times"][a] * 1e6 for s in xs]
                ax.plot(xs, ys, color=COLOUR[a], lw=1.2, ls="--" if a in costs.ADDED else "-", label=a)
            ax.plot(all_sizes, [mine[s]["selection_s"] * 1e6 for s in all_sizes], color="black", lw=0, marker="o",
                    ms=3.5, mfc="none", label="ringsync's choice")
            losing = [s for s in all_sizes if mine[s]["selection_s"] > LOSS * mine[s]["best_all_s"]]
            ax.plot(losing, [mine[s]["selection_s"] * 1e6 for s in losing], color="red", lw=0, marker="x", ms=6,
                    label="choice > 1.1x the best")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(f"{N} nodes x {L} rank{'s' if L > 1 else ''} per node")
            ax.set_xlabel("message size (bytes)")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel("modelled time (us)")
        handles = {}
        for ax in axes:  # every algorithm drawn in any panel (direct only where n <= 16)
            for handle, label in zip(*ax.get_legend_handles_labels()):
                handles.setdefault(label, handle)
        axes[-1].legend(handles.values(), handles.keys(), fontsize=7, loc="upper left")
        fig.suptitle(f"All-reduce time vs size, model `{params.name}` (bench/scale_model)")
        fig.tight_layout()
        fig.savefig(os.path.join(figures, f"scale_time_{tag}_L{L}.png"), dpi=110)
        plt.close(fig)

        # The loss of the selection against the best with Rabenseifner and the tree, over N x S.
        nodes = sorted({r["nodes"] for r in rows})
        grid = [[0.0] * len(all_sizes) for _ in nodes]
        labels = [[""] * len(all_sizes) for _ in nodes]
        for r in rows:
            if r["ranks_per_node"] != L:
                continue
            i, j = nodes.index(r["nodes"]), all_sizes.index(r["bytes"])
            grid[i][j] = math.log2(r["selection_s"] / r["best_all_s"])
            labels[i][j] = SHORT[r["best_all"]]
        fig, ax = plt.subplots(figsize=(16, 7.5))
        image = ax.imshow(grid, aspect="auto", origin="lower", cmap="Reds", vmin=0, vmax=3)
        for i in range(len(nodes)):
            for j in range(len(all_sizes)):
                ax.text(j, i, labels[i][j], ha="center", va="center", fontsize=6)
        ax.set_xticks(range(len(all_sizes)), [human(s).replace(" ", "") for s in all_sizes], rotation=60, fontsize=7)
        ax.set_yticks(range(len(nodes)), nodes, fontsize=7)
        ax.set_xlabel("message size")
        ax.set_ylabel("nodes N")
        bar = fig.colorbar(image)
        bar.set_label("log2(ringsync's choice / best incl. Rabenseifner and tree)")
        ax.set_title(f"{L} rank(s) per node, model `{params.name}`: cell = best algorithm (D direct, R ring, "
                     "H hierarchical, RD recursive doubling, RDs sharded at every size, Rab Rabenseifner, T tree)",
                     fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(figures, f"scale_loss_{tag}_L{L}.png"), dpi=110)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", default=os.path.join(HERE, "params.json"))
    ap.add_argument("--set", default="simulated_1gbit", help="which parameter set of --params")
    ap.add_argument("--selection", default=selection.default_binary(),
                    help="the selection_table binary, or a CSV it wrote")
    ap.add_argument("--ranks-per-node", default="1,8")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    ap.add_argument("--figures", default=os.path.join(HERE, "..", "figures"))
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--default-latency", action="store_true",
                    help="leave RINGSYNC_NETWORK_LATENCY_BYTES and RINGSYNC_REDUCE_TO_LINK_RATIO at the library's "
                         "defaults instead of the set's lambda and gamma/beta")
    args = ap.parse_args()
    params = costs.Params.load(args.params, args.set)
    ranks = [int(x) for x in args.ranks_per_node.split(",")]
    # The selection told the set's network, as a user sets RINGSYNC_NETWORK_LATENCY_BYTES and
    # RINGSYNC_REDUCE_TO_LINK_RATIO.
    env = {k: v for k, v in os.environ.items() if k.startswith("RINGSYNC_")}
    if not args.default_latency:
        env["RINGSYNC_NETWORK_LATENCY_BYTES"] = str(params.latency_bytes())
        env["RINGSYNC_REDUCE_TO_LINK_RATIO"] = f"{params.reduce_to_link_ratio():.6g}"
    told = {k: env.get(k, "default") for k in ("RINGSYNC_NETWORK_LATENCY_BYTES", "RINGSYNC_REDUCE_TO_LINK_RATIO")}
    print("# selection_table under " + " ".join(f"{k}={v}" for k, v in told.items()))
    chosen = selection.load(args.selection, NODES, ranks, MIN_BYTES, MAX_BYTES, env)
    rows = evaluate(params, chosen, NODES, ranks)
    os.makedirs(args.out, exist_ok=True)
    write_csv(rows, os.path.join(args.out, f"scale_{args.set}.csv"))
    text = summary(rows, params, NODES, ranks) + "\n" + headline(rows, ranks)
    for L in ranks:
        text += f"\n### Best algorithm per point, {L} rank(s) per node (with Rabenseifner and the tree)\n\n"
        text += best_map(rows, L, NODES, "best_all") + "\n"
        text += f"\n### ringsync's choice per point, {L} rank(s) per node\n\n"
        text += best_map([dict(r, sel=r["selection"]) for r in rows], L, NODES, "sel") + "\n"
    with open(os.path.join(args.out, f"scale_{args.set}.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    if not args.no_plots:
        os.makedirs(args.figures, exist_ok=True)
        plot(rows, params, ranks, args.figures, args.set)
        print(f"# plots: {args.figures}/scale_time_{args.set}_L*.png, scale_loss_{args.set}_L*.png")


if __name__ == "__main__":
    main()
