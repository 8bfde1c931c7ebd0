#!/usr/bin/env python3
"""Checks that a timeline of NCCL all-reduces has a device row: every call made on device memory
through NCCL has one "<kind> (device)" event (timed with CUDA events) on its communicator's device
track, with a positive duration that ends no earlier than it starts; host calls have none.
  check_device_timeline.py TRACE    (written by RINGSYNC_TIMELINE=TRACE, e.g. allreduce_perf --backend nccl)"""
import json
import sys


def main(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    calls = [e for e in events if e.get("ph") == "X" and e.get("args", {}).get("memory") in ("device", "host")]
    device = {(e["pid"], e["args"]["call"]): e for e in events if e.get("ph") == "X" and e["name"].endswith(" (device)")}
    on_nccl = [c for c in calls if c["args"]["memory"] == "device" and c["args"].get("backend") == "nccl"]
    problems = []
    if not on_nccl:
        problems.append("no NCCL call on device memory in the trace")
    for call in on_nccl:
        row = device.get((call["pid"], call["args"]["call"]))
        if row is None:
            problems.append(f"rank {call['pid']} call {call['args']['call']} ({call['name']}) has no device event")
        elif not row.get("dur", 0) > 0:
            problems.append(f"rank {call['pid']} call {call['args']['call']}: device event of {row.get('dur')} us")
    for call in calls:
        if call["args"]["memory"] == "host" and (call["pid"], call["args"]["call"]) in device:
            problems.append(f"rank {call['pid']} call {call['args']['call']} on host memory has a device event")
    if problems:
        print("check_device_timeline: FAILED:\n  " + "\n  ".join(problems[:20]))
        return 1
    durations = sorted(device[(c["pid"], c["args"]["call"])]["dur"] for c in on_nccl)
    print(f"check_device_timeline: {len(on_nccl)} NCCL calls, each with a device event "
          f"(median {durations[len(durations) // 2]:.1f} us, longest {durations[-1]:.1f} us)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
