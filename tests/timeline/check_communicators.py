#!/usr/bin/env python3
"""Checks the timeline timeline_communicators wrote (see there for the modes): one file at PATH,
one process per recording world rank labelled by its world rank, every communicator's calls of
every rank in it (the communicator's row names its world ranks), no per-rank files left beside
it, no timeline warning, and no wait for a merge (the run took less than the merge's deadline).
  check_communicators.py MODE PATH RANKS STDERR_FILE ELAPSED_SECONDS"""
import glob
import json
import sys


def fail(message):
    print("check_communicators: FAILED: " + message)
    sys.exit(1)


def recording_ranks(mode, ranks):
    if mode == "some":
        return [r for r in range(ranks) if r % 2 == 0]
    if mode == "some0":
        return list(range(1, ranks))
    return list(range(ranks))


def expected_calls(path, rank):
    """{(kind, "world ranks a, b"): calls} from the driver's notes."""
    want = {}
    with open(f"{path}.expected.{rank}") as f:
        for line in f:
            calls, kind, members = line.split()
            key = (kind, "world ranks " + ", ".join(members.split(",")))
            want[key] = want.get(key, 0) + int(calls)
    return want


def main():
    mode, path, ranks, stderr_file, elapsed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    problems = []
    recording = recording_ranks(mode, ranks)
    try:
        with open(path) as f:
            trace = json.load(f)
    except (OSError, ValueError) as error:
        fail(f"{path} is not a readable JSON trace: {error}")
    events = trace["traceEvents"]
    names = [(e["pid"], e["args"]["name"]) for e in events if e.get("name") == "process_name"]
    if sorted(names) != [(r, f"rank {r}") for r in recording]:
        problems.append(f"process names {sorted(names)}, expected one 'rank r' per recording world rank {recording}")
    for rank in recording:
        rows = {e["tid"]: e["args"]["name"] for e in events
                if e.get("name") == "thread_name" and e["pid"] == rank}
        calls = [e for e in events if e.get("ph") == "X" and e["pid"] == rank and e["name"] in ("allreduce", "barrier")]
        want = expected_calls(path, rank)
        for (kind, members), count in sorted(want.items()):
            tids = [tid for tid, name in rows.items() if name.endswith(f"({members})")]
            got = len([c for c in calls if c["name"] == kind and c["tid"] in tids])
            if got != count:
                problems.append(f"rank {rank}: {got} {kind} calls on the rows of {members} {tids}, expected {count}")
        if len(calls) != sum(want.values()):
            problems.append(f"rank {rank}: {len(calls)} calls in the file, expected {sum(want.values())}")
    others = sorted(glob.glob(glob.escape(path) + ".rank*"))
    if others:
        problems.append(f"per-rank files were written beside the timeline: {others}")
    with open(stderr_file) as f:
        warnings = [line.strip() for line in f if "timeline" in line and "warn" in line]
    if warnings:
        problems.append(f"timeline warnings: {warnings}")
    if elapsed >= 8:
        problems.append(f"the run took {elapsed:.1f} s: a rank waited for the merge's deadline (10 s)")
    if problems:
        fail("; ".join(problems))
    print(f"check_communicators: {mode} at np={ranks}: OK ({len(recording)} ranks in the file, {elapsed:.1f} s)")


if __name__ == "__main__":
    main()
