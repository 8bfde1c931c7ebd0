"""torch's own distributed tests (torch.testing._internal.distributed.distributed_test, the subset
that Gloo runs) on "gloo" and on "ringsync", in one harness under mpirun.

    mpirun -np 2 python tests/torch/torch_conformance.py --workdir DIR [--json FILE] [-k SUBSTRING]

torch runs these tests by spawning one process per rank for every test; under mpirun every rank
runs them itself, in the same order: for each test, for each backend, a fresh default group
(file:// rendezvous in DIR, the group timeout --group-timeout), torch's file barrier, the test, the
barrier, destroy. The module is imported with BACKEND=gloo, so the tests, their skips and their
expectations are Gloo's: a test passes on a backend when it passes on every rank. Rank 0 prints
pass/fail/skip for both backends, every test that passes on Gloo and not on ringsync with its
first error line, and writes --json. Exit status: 0, or 1 when a test passing on Gloo fails on
ringsync and is not in EXPECTED_TO_DIFFER (each there with its reason). A test running longer than
--test-timeout seconds ends the job (MPI_Abort) naming it.
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import threading
import time
import traceback
import unittest

os.environ["BACKEND"] = "gloo"  # the subset and expectations of Gloo (read when the module is imported)

import numpy as np  # noqa: E402
import torch.distributed as dist  # noqa: E402

import ringsync  # noqa: E402
import ringsync.torch  # noqa: E402

# Tests whose Gloo expectations name Gloo itself (its messages, its options), or a feature the
# README names as not supported, with the reason; they are reported but do not fail the run.
EXPECTED_TO_DIFFER = {
    "test_sparse_all_reduce_sum": "sparse tensors: ringsync refuses them by name (README: use a Gloo group)",
    "test_sparse_all_reduce_sum_cuda": "sparse tensors: ringsync refuses them by name (README: use a Gloo group)",
    "test_get_backend": "the harness: the test expects dist.get_backend() to be BACKEND, which is 'gloo' here",
    "test_ddp_logging_data_cpu": "torch's DDP logging reports a registered backend as 'custom', not its name",
    "test_barrier_timeout_full_group": "the test matches Gloo's wording (' Timed out '); ringsync raises its "
                                       "TimeoutError ('barrier #0 timed out after 1 s waiting for rank(s) 1')",
}

PASS, SKIP, FAIL = 0, 1, 2


def tests_of(base, substring):
    return sorted(name for name in dir(base) if name.startswith("test_") and substring in name)


class Watchdog:
    """Ends the job when one test runs longer than `seconds` (a rank left waiting for ever)."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.current = None
        self.since = time.monotonic()
        self.lock = threading.Lock()
        threading.Thread(target=self.watch, daemon=True).start()

    def start(self, name):
        with self.lock:
            self.current, self.since = name, time.monotonic()

    def watch(self):
        while True:
            time.sleep(1.0)
            with self.lock:
                late = self.current and time.monotonic() - self.since > self.seconds
                name = self.current
            if late:
                print(f"torch_conformance: {name} ran more than {self.seconds} s on rank "
                      f"{os.environ.get('OMPI_COMM_WORLD_RANK')}: ending the job", flush=True)
                ringsync.abort(1)


def run_one(harness_class, name, backend, rank, size, init_file, group_timeout):
    """PASS, SKIP or FAIL on this rank, and the first error line."""
    from torch.testing._internal.common_distributed import TEST_SKIPS
    from torch.testing._internal.distributed.distributed_test import Barrier

    skip_codes = {skip.exit_code for skip in TEST_SKIPS.values()}
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=group_timeout))
    test = harness_class(name)
    test.rank = rank
    test.file_name = init_file
    outcome, reason = PASS, ""
    try:
        Barrier.sync()
        getattr(test, name)()
        Barrier.sync()
    except unittest.SkipTest as skip:
        outcome, reason = SKIP, str(skip)
    except SystemExit as exit_:
        outcome = SKIP if exit_.code in skip_codes else FAIL
        reason = f"exit {exit_.code}"
    except BaseException as error:  # noqa: BLE001 - every failure is a result here
        outcome = FAIL
        lines = traceback.format_exception_only(type(error), error)
        reason = lines[-1].strip().splitlines()[0][:300] if lines else type(error).__name__
    finally:
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a group left broken by the failure
            pass
    return outcome, reason


def agree(world, outcome):
    """The outcome on every rank: FAIL if any rank failed, else SKIP if any skipped."""
    value = np.array([outcome], dtype=np.int32)
    world.allreduce(value, op="max")
    return int(value[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", required=True, help="a folder every rank can reach (emptied first)")
    parser.add_argument("--json", help="write every test's outcome here (rank 0)")
    parser.add_argument("-k", default="", help="only tests whose name holds this")
    parser.add_argument("--backends", default="gloo,ringsync")
    parser.add_argument("--group-timeout", type=float, default=30.0)
    parser.add_argument("--test-timeout", type=float, default=120.0)
    args = parser.parse_args()

    ringsync.init()
    world = ringsync.Communicator()
    rank, size = world.rank, world.size
    if rank == 0:
        shutil.rmtree(args.workdir, ignore_errors=True)
        for sub in ("barrier", "test_dir", "init_dir"):
            os.makedirs(os.path.join(args.workdir, sub))
    world.barrier()
    os.environ.update({"TEMP_DIR": args.workdir, "WORLD_SIZE": str(size), "RANK": str(rank),
                       "INIT_METHOD": f"file://{args.workdir}/init_dir/shared_init_file"})

    try:
        from torch.testing._internal.distributed.distributed_test import Barrier, DistributedTest, TestDistBackend
    except ImportError as error:  # torch's test helpers need expecttest (pip install expecttest)
        if rank == 0:
            print(f"SKIPPED: torch's distributed tests do not import: {error}")
        return 77

    class Harness(TestDistBackend, DistributedTest._DistTestBase):
        pass

    backends = args.backends.split(",")
    names = tests_of(DistributedTest._DistTestBase, args.k)
    watchdog = Watchdog(args.test_timeout)
    results = {}
    for index, name in enumerate(names):
        results[name] = {}
        for backend in backends:
            world.barrier()
            if rank == 0:
                Barrier.init()  # torch's file barrier starts afresh for every test
            Barrier.barrier_id = 0
            world.barrier()
            watchdog.start(f"{name} on {backend}")
            init_file = os.path.join(args.workdir, "init_dir", f"{backend}_{index}")
            outcome, reason = run_one(Harness, name, backend, rank, size, init_file, args.group_timeout)
            results[name][backend] = {"outcome": agree(world, outcome), "reason": reason}
    watchdog.start(None)
    return report(results, backends, rank, size, args.json)


def report(results, backends, rank, size, path):
    words = {PASS: "pass", SKIP: "skip", FAIL: "fail"}
    counts = {b: {w: sum(r[b]["outcome"] == k for r in results.values()) for k, w in words.items()} for b in backends}
    reference, candidate = backends[0], backends[-1]
    regressions = {n: r[candidate]["reason"] for n, r in results.items()
                   if r[reference]["outcome"] == PASS and r[candidate]["outcome"] != PASS}
    unexpected = sorted(n for n in regressions if n not in EXPECTED_TO_DIFFER)
    if rank == 0:
        print(f"# torch.testing._internal.distributed.distributed_test (Gloo's subset), {size} ranks, "
              f"{len(results)} tests")
        for b in backends:
            print(f"{b}: {counts[b]['pass']} pass, {counts[b]['fail']} fail, {counts[b]['skip']} skip")
        for name, reason in sorted(regressions.items()):
            note = EXPECTED_TO_DIFFER.get(name, "NOT EXPECTED")
            print(f"  passes on {reference}, not on {candidate}: {name}: {reason} [{note}]")
        if path:
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"ranks": size, "counts": counts, "tests": results}, f, indent=1)
    return 1 if unexpected and len(backends) > 1 else 0


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.exit(status)
