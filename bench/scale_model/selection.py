"""ringsync's own choice, read from bench/selection_table (which calls detail::chooseAlgorithm):
never a copy of the rules."""
from __future__ import annotations

import csv
import io
import os
import subprocess


def default_binary() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "build", "bin", "selection_table")


def run_table(binary: str, nodes, ranks_per_node, min_bytes: int, max_bytes: int, factor: float = 2) -> str:
    """The CSV selection_table prints for this grid (RINGSYNC_* variables as in the environment)."""
    return run_table_env(binary, None, nodes, ranks_per_node, min_bytes, max_bytes, factor)


def run_table_env(binary: str, ringsync_env, nodes, ranks_per_node, min_bytes: int, max_bytes: int,
                  factor: float = 2) -> str:
    """The same with the RINGSYNC_* variables replaced by ringsync_env (None: as they are), e.g.
    {"RINGSYNC_ALGO": "ring"} for what a forced ring takes."""
    env = None
    if ringsync_env is not None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("RINGSYNC_")}
        env.update(ringsync_env)
    command = [binary, "--nodes", ",".join(map(str, nodes)), "--ranks-per-node", ",".join(map(str, ranks_per_node)),
               "-b", str(min_bytes), "-e", str(max_bytes), "-f", str(factor)]
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout


def parse_table(text: str) -> dict:
    """{(nodes, ranks_per_node, bytes): (algorithm, reason)} from selection_table's CSV."""
    rows = csv.DictReader(io.StringIO(text))
    expected = {"nodes", "ranks_per_node", "ranks", "bytes", "algorithm", "hierarchy", "reason"}
    if rows.fieldnames is None or not expected <= set(rows.fieldnames):
        raise ValueError(f"not selection_table's CSV: columns {rows.fieldnames}")
    return {(int(r["nodes"]), int(r["ranks_per_node"]), int(r["bytes"])): (r["algorithm"], r["reason"]) for r in rows}


def load(source: str, nodes, ranks_per_node, min_bytes: int, max_bytes: int, ringsync_env=None) -> dict:
    """source: the selection_table binary (run for this grid, under ringsync_env as in
    run_table_env) or a CSV it wrote."""
    if source.endswith(".csv"):
        with open(source) as f:
            return parse_table(f.read())
    return parse_table(run_table_env(source, ringsync_env, nodes, ranks_per_node, min_bytes, max_bytes))
