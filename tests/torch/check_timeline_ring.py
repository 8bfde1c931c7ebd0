"""Issue 36 item 10: the timeline's ring of 32,768 call records is shared by every communicator of
the process, and a record is claimed when a call starts. A call still open while other
communicators claim 32,768 more records has its slot handed to another call, and its end is then
written into that call's record.

Group A's all-reduce waits 12 s (rank 1 arrives late) while group B, on another thread, makes
36,000 small all-reduces and ends. Expected: rank 0's timeline holds A's call (count 8, ~12 s) and
no call of B's lasts seconds. Found (src/timeline.cc as of this branch): A's record is gone and one
of B's 1-element calls lasted ~10.7 s with A's arrival times; fixed by committing a record when
its call ends (Timeline::commitCall). CTest runs it (torch_timeline_ring.np2); by hand:

    rm -f /tmp/tl.json; RINGSYNC_TIMELINE=/tmp/tl.json RINGSYNC_TIMEOUT_SECONDS=60 \\
        mpirun -np 2 python tests/torch/check_timeline_ring.py && python tests/torch/check_timeline_ring.py --check /tmp/tl.json
"""

import json
import sys
import threading
import time


def run():
    import torch
    import torch.distributed as dist

    import ringsync
    import ringsync.torch

    ringsync.torch.init_process_group()
    rank = dist.get_rank()
    a, b = dist.new_group(backend="ringsync"), dist.new_group(backend="ringsync")
    world = ringsync.Communicator()
    world.barrier()

    def busy():
        x = torch.ones(1)
        for _ in range(36000):
            dist.all_reduce(x, group=b)

    thread = threading.Thread(target=busy)
    thread.start()
    if rank == 1:
        time.sleep(12.0)
    dist.all_reduce(torch.ones(8), group=a)
    thread.join()
    world.barrier()
    dist.destroy_process_group()
    return 0


def check(path):
    calls = [e for e in json.load(open(path, encoding="utf-8"))["traceEvents"] if e.get("ph") == "X"]
    rank0_a = [e for e in calls if e["pid"] == 0 and e.get("args", {}).get("count") == 8]
    long_b = [e for e in calls if e.get("args", {}).get("count") == 1 and e.get("dur", 0) > 1e6]
    print(f"rank 0's record of A's call: {len(rank0_a)}; B's calls lasting over 1 s: {len(long_b)}")
    for e in long_b:
        print(f"  rank {e['pid']} track {e['tid']} {e['name']} #{e['args'].get('call')} count 1 lasted "
              f"{e['dur'] / 1e6:.2f} s, arrivals {e['args'].get('arrival_us')}")
    return 0 if rank0_a and not long_b else 1


if __name__ == "__main__":
    sys.exit(check(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[1] == "--check" else run())
