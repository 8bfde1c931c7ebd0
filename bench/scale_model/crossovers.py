#!/usr/bin/env python3
"""Where Rabenseifner (and a double binary tree) should take over, by the model: the crossover sizes
found numerically from costs.py and the closed-form approximations the selection can use as
constants, side by side, for N = 4 ... 1,024 nodes and L = 1 and 8 ranks per node.

  bench/scale_model/crossovers.py [--params params.json] [--set simulated_1gbit] [--out results/]

The closed forms (q = floor(log2 N), p = 2^q, e = 1 when N is not a power of two, else 0; h = 216
B, the header and call summary every message carries; o the per-message overhead; the L flows of
a node share its link, so a step of S/L per rank moves S·beta through it; the node phases, the
same for both sides, left out). With lambda = (alpha + 2·o)/beta, the network's latency in bytes:
  recursive doubling -> Rabenseifner
      S1 = (q+e)·(lambda + L·h) / ((q - 2 + 2/p) + (q+e)·gamma/(L·beta))
      (never when the denominator is <= 0: N <= 3 with gamma << beta)
  Rabenseifner -> the flat ring (L = 1), only when N is not a power of two
      S2 = ((N-1)·lambda + (N-1)·o/beta - (q+1)·(lambda + h)) / (1 - 1/p + 1/N)
      (a power of two: the two move the same bytes and Rabenseifner pays 2·log2(N) latencies
      against 2(N-1), so never, unless a core reduces slower than the link moves: then
      S2' = 2(N-1-q)·alpha·p / ((p-1)·min(gamma - beta, beta)), where the ring's overlap of
      reduction and transfer pays)
Across nodes of L >= 2 ranks the hierarchical all-reduce pays its ring's 2(N-1) latencies once per
piece (Q = hierarchical_piece_bytes(L), 669 KiB at L = 8), so it is behind Rabenseifner at every
size once 2(N-1)·alpha/Q > beta, i.e. N > Q·beta/(2·alpha) + 1.
"""
from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costs  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = [4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1000, 1024]
GRID = [8 * 2 ** (i / 8) for i in range(8 * 23 + 1)]  # 8 B - 64 MiB, eight steps per doubling


def human(n: float) -> str:
    if n is None:
        return "never"
    if math.isinf(n):
        return "never"
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def shape(N: int):
    q = costs.log2_floor(N)
    p = 1 << q
    return q, p, int(N > p)


H = costs.DOUBLING_PREFIX


def latency_bytes(prm) -> float:
    return (prm.alpha + 2 * prm.overhead) / prm.beta


def s1(N, L, prm, lam=None):
    q, p, e = shape(N)
    lam = latency_bytes(prm) if lam is None else lam
    den = (q - 2 + 2 / p) + (q + e) * prm.gamma / (L * prm.beta)
    return math.inf if den <= 0 else (q + e) * (lam + L * H) / den


def s2(N, L, prm, lam=None):
    q, p, e = shape(N)
    if not e:
        return s2_reduction_bound(N, prm)
    lam = latency_bytes(prm) if lam is None else lam
    return max(0.0, ((N - 1) * lam + (N - 1) * prm.overhead / prm.beta - (q + 1) * (lam + H)) / (1 - 1 / p + 1 / N))


def first_win(N, L, prm, winner, loser, margin=1.0):
    """The smallest size from which `winner` stays faster than `loser` (by `margin`: 1.05 = 5%) up
    to 64 MiB, both available; None when it never does."""
    sizes = [S for S in GRID if costs.available(loser, N, L, S) and costs.available(winner, N, L, S)]
    wins = [costs.TIME[winner](N, L, S, prm) * margin < costs.TIME[loser](N, L, S, prm) for S in sizes]
    for i in range(len(wins)):
        if all(wins[i:]):
            return sizes[i]
    return None


def large_alternative(N, L):
    return "ring" if L == 1 else "hierarchical"


def best(N, L, S, prm, names):
    t = {a: costs.TIME[a](N, L, S, prm) for a in names + ("rd_sharded",) if costs.available(a, N, L, S)}
    return min(t, key=t.get), min(t.values())


def tree_gain(N, L, prm):
    """The largest factor by which adding the tree beats the best of ringsync's algorithms (recursive
    doubling sharded at every size) and Rabenseifner, and the sizes where it beats them by > 10%."""
    worst, where = 1.0, []
    for S in GRID:
        _, without = best(N, L, S, prm, costs.EXISTING + ("rabenseifner",))
        t = costs.TIME["tree"](N, L, S, prm)
        if without / t > 1.1:
            where.append(S)
        worst = max(worst, without / t)
    return worst, (where[0], where[-1]) if where else None


def proposed(N, L, S, prm, lam):
    """The selection the report proposes across nodes (N >= 4): recursive doubling below S1,
    Rabenseifner above it, and above S2 (N not a power of two, or a core slower than the link) the
    flat ring (L = 1) or the hierarchical all-reduce where its per-piece latencies keep up
    (else Rabenseifner still); lam: the latency in bytes the selection is given as a constant."""
    if S < s1(N, L, prm, lam) and costs.available("recursive_doubling", N, L, S):
        return "recursive_doubling"
    if S < s2(N, L, prm, lam):
        return "rabenseifner"
    if L > 1 and not hierarchical_keeps_up(N, L, prm, lam):
        return "rabenseifner"
    return "ring" if L == 1 else "hierarchical"


def s2_reduction_bound(N, prm):
    """N a power of two: Rabenseifner reduces in its reduce-scatter and copies in its all-gather, one
    after the other, where the ring overlaps them; when a core reduces slower than the link moves
    (gamma > beta) the ring gains (p-1)/p·S·min(gamma - beta, beta) and pays 2(N-1-q) latencies more:
    S2' = 2(N-1-q)·alpha·p / ((p-1)·min(gamma - beta, beta)); never when gamma <= beta."""
    q, p, _ = shape(N)
    if prm.gamma <= prm.beta:
        return math.inf
    return 2 * (N - 1 - q) * prm.alpha * p / ((p - 1) * min(prm.gamma - prm.beta, prm.beta))


def hierarchical_keeps_up(N, L, prm, lam=None) -> bool:
    """Whether the hierarchical all-reduce's 2(N-1) latencies per piece cost less than the 2·S·beta
    that Rabenseifner's pre/post step adds (N not a power of two): (N - q - 2)·lambda < Q."""
    q, _, _ = shape(N)
    lam = latency_bytes(prm) if lam is None else lam
    return (N - q - 2) * lam < costs.hierarchical_piece_bytes(L)


def table(prm, L) -> list:
    alt = large_alternative(1, L)
    lines = [f"### {L} rank(s) per node, parameters `{prm.name}`", "",
             f"| N | RD -> Rab: model | S1 | Rab -> {alt} (> 5%): model | S2 | tree's gain over the best "
             "of the rest | sizes where > 1.1x |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for N in NODES:
        rd = first_win(N, L, prm, "rabenseifner", "recursive_doubling")
        big = first_win(N, L, prm, alt, "rabenseifner", margin=1.05)
        gain, where = tree_gain(N, L, prm)
        lines.append(f"| {N} | {human(rd)} | {human(s1(N, L, prm))} | {human(big)} | "
                     f"{human(s2(N, L, prm))} | {gain:.2f}x | "
                     f"{human(where[0]) + ' - ' + human(where[1]) if where else 'none'} |")
    return lines + [""]


# What the proposed selection is measured against: every algorithm ringsync has but the direct round
# (across nodes its n-1 messages per rank make it a question of the per-message overhead, which
# calibrate.sh's 4 x 1 and 8 x 1 runs settle; see the README), and Rabenseifner.
REFERENCE = ("split", "ring", "hierarchical", "recursive_doubling", "rabenseifner")


def policy_table(sets, lams) -> list:
    """The proposed selection's worst loss against the best of REFERENCE (recursive doubling
    sharded), per parameter set and latency constant."""
    lines = ["### The proposed selection, worst loss over N = 4 ... 1,024, L = 1 and 8, 8 B - 64 MiB", "",
             "Against the best of ring, hierarchical, recursive doubling (sharded) and Rabenseifner.", "",
             "| parameters | lambda given to the selection | worst loss (N, L, size) | points > 1.1x |",
             "|---|---:|---|---:|"]
    for prm in sets:
        for lam in [None] + lams:
            worst, at, over, total = 1.0, None, 0, 0
            for L in (1, 8):
                for N in NODES:
                    for S in GRID[::4]:
                        choice = proposed(N, L, S, prm, lam)
                        if not costs.available(choice, N, L, S):
                            continue
                        t = costs.TIME[choice](N, L, S, prm)
                        if choice == "recursive_doubling":
                            t = min(t, costs.t_recursive_doubling(N, L, S, prm, shard_from=0))
                        _, b = best(N, L, S, prm, REFERENCE)
                        total += 1
                        over += t / b > 1.1
                        if t / b > worst:
                            worst, at = t / b, (N, L, S)
            name = f"its own, {human(latency_bytes(prm))}" if lam is None else human(lam)
            lines.append(f"| `{prm.name}` | {name} | {worst:.2f}x ({at[0]}, {at[1]}, {human(at[2])}) | "
                         f"{over} of {total} |" if at else f"| `{prm.name}` | {name} | 1.00x | 0 of {total} |")
    return lines + [""]


def shard_table(prm) -> list:
    """Recursive doubling across nodes of 8 ranks: each local rank sends the whole message below
    kAcrossNodesShardFromBytes (L·S < 32 KiB); what sharding from the smallest size would change."""
    lines = [f"### Recursive doubling across nodes of 8 ranks: sharding from the smallest size (`{prm.name}`)", "",
             "| N | 64 B | 512 B | 2 KiB | (now / sharded, us) |", "|---:|---:|---:|---:|---|"]
    for N in (2, 8, 64, 1024):
        cells = []
        for S in (64, 512, 2048):
            now = costs.t_recursive_doubling(N, 8, S, prm)
            sharded = costs.t_recursive_doubling(N, 8, S, prm, shard_from=0)
            cells.append(f"{now * 1e6:.0f} / {sharded * 1e6:.0f}")
        lines.append(f"| {N} | " + " | ".join(cells) + " | |")
    return lines + [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--params", default=os.path.join(HERE, "params.json"))
    ap.add_argument("--set", action="append", help="parameter set(s) of --params (default: all but calibrated ones)")
    ap.add_argument("--out", default=os.path.join(HERE, "results"))
    args = ap.parse_args()
    import json
    with open(args.params) as f:
        names = [k for k in json.load(f) if not k.startswith("_")]
    sets = [costs.Params.load(args.params, name) for name in (args.set or names)]
    out = ["## Crossovers: the model's and the closed forms'", ""]
    for prm in sets:
        out += [f"Parameters `{prm.name}`: alpha {prm.alpha * 1e6:.2f} us, beta {prm.beta * 1e9:.3f} ns/B, gamma "
                f"{prm.gamma * 1e9:.3f} ns/B, overhead {prm.overhead * 1e6:.2f} us: lambda = (alpha + 2o)/beta = "
                f"{human(latency_bytes(prm))}", ""]
        for L in (1, 8):
            out += table(prm, L)
        out += shard_table(prm)
    out += policy_table(sets, [2048.0, 8192.0, 16384.0, 32768.0])
    text = "\n".join(out)
    print(text)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "crossovers.md"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    main()
