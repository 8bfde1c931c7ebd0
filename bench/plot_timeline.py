#!/usr/bin/env python3
"""Draw a few training steps from a ringsync timeline (RINGSYNC_TIMELINE / ringsync-train --timeline).

    mpirun -np 2 build/bin/ringsync-train --max-steps 60 --timeline train.json
    python3 bench/plot_timeline.py train.json --png bench/figures/timeline.png --first-step 40 --steps 3

One band per rank; in each, a row per communicator (the collectives, labelled with their
algorithm), a row for the GradientAverager's buckets (pack / exchange / unpack), and a row for the
training loop: backward's markReady marks and the time synchronize() waited. Times are in
milliseconds from the first step shown, on the clock all ranks share.
"""
import argparse
import json

import matplotlib

matplotlib.use("Agg")  # files only; no display needed
import matplotlib.pyplot as plt  # noqa: E402

STEP_TRACK, BUCKET_TRACK = 100, 101
COLOURS = {"pack": "#f2a541", "exchange": "#3c78d8", "unpack": "#6aa84f", "synchronize": "#cc4125",
           "collective": "#8e7cc3", "failed": "#000000"}


def load(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["traceEvents"]


def window(events, first_step, steps):
    """[start, end) in us of steps first_step .. first_step+steps-1, from rank 0's step boundaries:
    a step runs from the end of the previous synchronize() to the end of its own."""
    syncs = sorted((e for e in events if e["name"] == "synchronize" and e["pid"] == 0), key=lambda e: e["ts"])
    if not syncs:
        raise SystemExit("no synchronize() in this timeline: was a GradientAverager used?")
    first_step = min(first_step, len(syncs) - 1)
    last = min(first_step + steps, len(syncs)) - 1
    start = syncs[first_step - 1]["ts"] + syncs[first_step - 1]["dur"] if first_step > 0 else syncs[0]["ts"]
    return start, syncs[last]["ts"] + syncs[last]["dur"]


def rows_of(events):
    """{rank: [track, ...]} in drawing order: communicators, buckets, steps."""
    rows = {}
    for e in events:
        if e.get("ph") in ("X", "i"):
            rows.setdefault(e["pid"], set()).add(e["tid"])
    return {pid: sorted(tids, key=lambda t: (t >= STEP_TRACK, -t if t >= STEP_TRACK else t)) for pid, tids in rows.items()}


def row_label(tid):
    if tid == STEP_TRACK:
        return "backward / synchronize"
    if tid == BUCKET_TRACK:
        return "buckets"
    return "communicator %d" % tid


def draw(events, start, end, out, title):
    shown = [e for e in events if e.get("ph") in ("X", "i") and e["ts"] <= end and e["ts"] + e.get("dur", 0) >= start]
    rows = rows_of(shown)
    y_of, labels, ticks, y = {}, [], [], 0
    for pid in sorted(rows, reverse=True):
        for tid in reversed(rows[pid]):
            y_of[(pid, tid)] = y
            labels.append("rank %d: %s" % (pid, row_label(tid)))
            ticks.append(y)
            y += 1
        y += 0.5
    fig, ax = plt.subplots(figsize=(12, 0.42 * y + 1.6))
    ms = lambda us: (us - start) / 1000.0  # noqa: E731
    for e in shown:
        key = (e["pid"], e["tid"])
        row = y_of[key]
        if e["ph"] == "i":
            ax.plot([ms(e["ts"])] * 2, [row - 0.35, row + 0.35], color="#444444", linewidth=0.8)
            continue
        name = e["name"].split()[0]
        if name == "bucket":
            continue  # drawn as its pack / exchange / unpack
        failed = e["name"].endswith("(failed)")
        colour = COLOURS["failed"] if failed else COLOURS.get(name, COLOURS["collective"])
        ax.broken_barh([(ms(e["ts"]), max(e["dur"] / 1000.0, 0.002))], (row - 0.35, 0.7), facecolors=colour)
        if e["tid"] < STEP_TRACK and e["dur"] / 1000.0 > 0.03 * ms(end):
            ax.text(ms(e["ts"] + e["dur"] / 2), row, e["args"].get("algorithm", ""), ha="center", va="center",
                    fontsize=7, color="white")
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels, fontsize=8)
    ax.set_xlim(0, ms(end))
    ax.set_xlabel("ms")
    ax.set_title(title, fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in ("pack", "exchange", "unpack", "synchronize",
                                                                        "collective")]
    handles.append(plt.Line2D([0], [0], color="#444444", linewidth=0.8))
    ax.legend(handles, ["pack", "exchange", "unpack", "synchronize() wait", "collective", "markReady"],
              loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=6, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", help="the merged timeline (Chrome trace JSON)")
    parser.add_argument("--png", required=True, help="where to write the picture")
    parser.add_argument("--first-step", type=int, default=10, help="first training step shown (default 10)")
    parser.add_argument("--steps", type=int, default=3, help="steps shown (default 3)")
    parser.add_argument("--title", default="", help="title (default: the file and the steps)")
    args = parser.parse_args()
    events = load(args.file)
    start, end = window(events, args.first_step, args.steps)
    title = args.title or "%s: steps %d-%d" % (args.file, args.first_step, args.first_step + args.steps - 1)
    draw(events, start, end, args.png, title)
    print("wrote %s (%.2f ms)" % (args.png, (end - start) / 1000.0))


if __name__ == "__main__":
    main()
