#!/usr/bin/env python3
"""Checks of the scale model: the closed forms against the message-level simulator, the textbook
formulas they reduce to, and the selection table read from the real selection function.

  python3 bench/scale_model/test_model.py [--selection build/bin/selection_table]
"""
from __future__ import annotations

import math
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import costs  # noqa: E402
import scale_model  # noqa: E402
import selection  # noqa: E402
import simulator  # noqa: E402

P = costs.Params(alpha=30e-6, beta=8e-9, gamma=0.1e-9, alpha_shm=1e-6, beta_shm=0.1e-9, overhead=2e-6, name="test")
# A link faster than one core reduces (100 Gbit/s): the CPU and the link take turns as the bottleneck.
FAST = costs.Params(alpha=3e-6, beta=0.08e-9, gamma=0.1e-9, alpha_shm=0.5e-6, beta_shm=0.1e-9, overhead=0.3e-6,
                    name="fast")
SIZES = (8, 4096, 65536, 1 << 20, 8 << 20)
SELECTION = selection.default_binary()


def relative(a: float, b: float) -> float:
    return a / b


class ClosedFormsAgainstSimulator(unittest.TestCase):
    """One rank per node: every link carries one flow, so the closed forms should match the
    message-by-message replay closely (pipelined ring, folds of non-powers of two included)."""

    def check(self, algorithm, layouts, low, high, sizes=SIZES, p=P):
        for N, L in layouts:
            for S in sizes:
                if not costs.available(algorithm, N, L, S):
                    continue
                with self.subTest(algorithm=algorithm, N=N, L=L, S=S, params=p.name):
                    sim = simulator.time(algorithm, N, L, S, p)
                    formula = costs.TIME[algorithm](N, L, S, p)
                    self.assertTrue(low <= formula / sim <= high, f"formula {formula * 1e6:.1f} us, simulated "
                                    f"{sim * 1e6:.1f} us")

    def test_ring(self):
        self.check("ring", [(2, 1), (3, 1), (5, 1), (8, 1), (16, 1)], 0.97, 1.05)

    def test_recursive_doubling(self):
        self.check("recursive_doubling", [(2, 1), (3, 1), (4, 1), (8, 1), (16, 1)], 0.99, 1.05)
        # non-powers of two above two: partly hidden folds the formula charges in full at mid sizes
        self.check("recursive_doubling", [(5, 1)], 0.99, 1.20)

    def test_rabenseifner(self):
        self.check("rabenseifner", [(2, 1), (3, 1), (4, 1), (5, 1), (8, 1), (16, 1)], 0.98, 1.02)

    def test_fast_link(self):
        # where the link and the CPU are close, the ring's max(link, CPU, chain) is optimistic
        self.check("ring", [(2, 1), (3, 1), (8, 1), (16, 1)], 0.82, 1.05, p=FAST)
        self.check("rabenseifner", [(2, 1), (3, 1), (8, 1), (16, 1)], 0.95, 1.03, p=FAST)
        self.check("recursive_doubling", [(2, 1), (4, 1), (8, 1)], 0.99, 1.05, p=FAST)

    def test_tree_at_the_same_segment(self):
        for N in (3, 8, 16):
            for S in (1 << 20, 8 << 20):
                with self.subTest(N=N, S=S):
                    sim = simulator.time("tree", N, 1, S, P, tree_segment=64 * 1024)
                    formula = costs.double_binary_tree(N, S, P, P.alpha, P.beta, 64 * 1024)
                    # the simulator's greedy order pipelines the two trees less well than the ideal
                    self.assertTrue(0.75 <= formula / sim <= 1.1, f"{formula * 1e6:.0f} / {sim * 1e6:.0f} us")

    def test_several_ranks_per_node(self):
        # The L flows of a node share its link: the closed forms assume fair sharing (each flow at
        # 1/L of the link, in step), the simulator serves whole messages first come first served,
        # which lets one flow's latency hide behind the others'. The closed forms are the slower.
        for algorithm in ("hierarchical", "recursive_doubling", "rabenseifner"):
            self.check(algorithm, [(2, 2), (4, 2), (3, 4)], 0.95, 1.45, sizes=(8, 4096, 65536, 512 * 1024))


class TextbookForms(unittest.TestCase):
    """With no per-message overhead the closed forms are the formulas the report quotes."""
    p = costs.Params(alpha=10e-6, beta=1e-9, gamma=0.25e-9, alpha_shm=1e-6, beta_shm=0.1e-9, overhead=0.0)

    def test_ring_unsegmented(self):
        for m in (2, 7, 64):
            S = 1000.0 * m  # a chunk far below a segment
            expected = 2 * (m - 1) * self.p.alpha + 2 * (m - 1) / m * S * self.p.beta + (m - 1) / m * S * self.p.gamma
            self.assertAlmostEqual(costs.ring(m, S, self.p, self.p.alpha, self.p.beta, 63 * 1024), expected, delta=1e-12)

    def test_rabenseifner_power_of_two(self):
        # the link is slower than the reduction here: every part but a step's last is reduced while
        # the next travels, so what remains of gamma is one part per reduce-scatter step
        for m in (2, 8, 1024):
            S = float(1 << 20)
            q = int(math.log2(m))
            bytes_ = 2 * (m - 1) / m * S + 2 * q * costs.DOUBLING_PREFIX
            expected = 2 * q * self.p.alpha + bytes_ * self.p.beta
            got = costs.rabenseifner(m, S, self.p, self.p.alpha, self.p.beta)
            self.assertTrue(0 <= got - expected <= q * costs.PART * self.p.gamma, f"{got} against {expected}")

    def test_rabenseifner_pre_and_post_step(self):
        S = float(1 << 20)
        extra = costs.rabenseifner(1000, S, self.p, self.p.alpha, self.p.beta) - costs.rabenseifner(
            512, S, self.p, self.p.alpha, self.p.beta)
        P = S + costs.DOUBLING_PREFIX
        expected = 2 * self.p.alpha + (P + S) * self.p.beta
        self.assertTrue(0 <= extra - expected <= costs.PART * self.p.gamma, f"{extra} against {expected}")


class SelectionTable(unittest.TestCase):
    def setUp(self):
        if not os.access(SELECTION, os.X_OK):
            self.skipTest(f"{SELECTION} is not built (cmake --build build --target selection_table)")

    def test_grid_is_complete_and_runnable(self):
        nodes, ranks = [1, 2, 3, 8, 1024], [1, 2, 8, 32]
        table = selection.load(SELECTION, nodes, ranks, 8, 64 << 20)
        sizes = list(scale_model.sizes())
        self.assertEqual(len(table), len(nodes) * len(ranks) * len(sizes))
        for (N, L, S), (algorithm, _) in table.items():
            with self.subTest(N=N, L=L, S=S):
                self.assertIn(algorithm, costs.TIME)  # a name the model knows
                self.assertTrue(costs.available(algorithm, N, L, S), "chosen where the model says it cannot run")

    def test_environment_reaches_the_selection(self):
        forced = selection.parse_table(selection.run_table_env(SELECTION, {"RINGSYNC_ALGO": "ring"}, [4], [1], 8, 8))
        self.assertEqual(forced[(4, 1, 8)][0], "ring")
        automatic = selection.parse_table(selection.run_table_env(SELECTION, {}, [4], [1], 8, 8))
        self.assertNotEqual(automatic[(4, 1, 8)][0], "ring")  # never the ring for 8 B across 4 nodes

    def test_network_latency_moves_s1(self):
        # 8 nodes x 1, 32 KiB: past S1 = 3(lambda + h)/1.25 at the default lambda (about 4.5 KB), below
        # it at a 100 Gbit/s cluster's 45000 (about 108 KB).
        def choice(env):
            return selection.parse_table(selection.run_table_env(SELECTION, env, [8], [1], 32768, 32768))[(8, 1, 32768)][0]
        self.assertEqual(choice({}), "rabenseifner")
        self.assertEqual(choice({"RINGSYNC_NETWORK_LATENCY_BYTES": "45000"}), "recursive_doubling")

    def test_reduce_to_link_ratio_moves_s1_and_s2(self):
        # 8 nodes x 1 at lambda 45000: S1 ~108 KB at g = 0.006, ~35 KB at g = 1.25; and with g > 1 the
        # ring from S2' = 2(N-1-q)(alpha/beta)p / ((p-1)min(g-1, 1)), ~1.4 MB.
        def choice(size, g):
            env = {"RINGSYNC_NETWORK_LATENCY_BYTES": "45000", "RINGSYNC_REDUCE_TO_LINK_RATIO": g}
            return selection.parse_table(selection.run_table_env(SELECTION, env, [8], [1], size, size))[(8, 1, size)][0]
        self.assertEqual(choice(65536, "0.006"), "recursive_doubling")
        self.assertEqual(choice(65536, "1.25"), "rabenseifner")
        self.assertEqual(choice(4 << 20, "0.006"), "rabenseifner")
        self.assertEqual(choice(4 << 20, "1.25"), "ring")


if __name__ == "__main__":
    if "--selection" in sys.argv:
        i = sys.argv.index("--selection")
        SELECTION = sys.argv[i + 1]
        del sys.argv[i:i + 2]
    unittest.main()
