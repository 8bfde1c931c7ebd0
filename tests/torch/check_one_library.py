"""One libringsync per process: ringsync.Communicator and the torch backend share the library.

Run under mpirun with RINGSYNC_TIMELINE=FILE, then once more with `--check FILE` (one process):
- every rank maps exactly one libringsync file, which both extension modules use;
- the process-wide state is one: FILE holds the calls and straggler summaries of the Python
  communicator and of the torch group's, on separate tracks. (With a copy of the library inside
  each extension, each copy kept its own timeline and wrote FILE over the other's.)
"""

import json
import os
import sys


def mapped_files():
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split()[-1] for line in maps if "/" in line}


def run():
    import numpy as np
    import torch
    import torch.distributed as dist

    import ringsync
    import ringsync.torch

    world = ringsync.Communicator()
    ringsync.torch.init_process_group()
    n = world.size
    x = torch.ones(4)
    dist.all_reduce(x)
    assert torch.equal(x, torch.full((4,), float(n))), x
    y = np.ones(3, dtype=np.float32)
    world.allreduce(y)
    assert (y == n).all(), y

    files = mapped_files()
    libraries = sorted(f for f in files if os.path.basename(f).startswith("libringsync"))
    modules = sorted(f for f in files if os.path.basename(f).startswith(("_ringsync.", "_c10d.")))
    assert len(modules) == 2, f"expected both extension modules mapped, got {modules}"
    assert len(libraries) == 1, f"expected one libringsync in the process, got {libraries or 'none'} (modules {modules})"
    print(f"rank {world.rank}: one library {libraries[0]}")
    dist.destroy_process_group()
    del world


def check(path):
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    summaries = trace["otherData"]["stragglers"]
    communicators = sorted(s["communicator"] for s in summaries)
    assert len(communicators) == 2 and len(set(communicators)) == 2, \
        f"expected the summaries of two communicators on separate tracks, got {summaries}"
    calls = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e.get("name", "").startswith("allreduce")]
    tracks = {e["tid"] for e in calls}
    assert set(communicators) <= tracks, f"all-reduce calls on tracks {tracks}, communicators {communicators}"
    print(f"timeline {path}: communicators {communicators}, {len(calls)} all-reduce calls")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        check(sys.argv[2])
    else:
        run()
