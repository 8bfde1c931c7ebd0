#!/usr/bin/env bash
# The trainer across simulated hosts against the same trainer on one host, in paired rounds: each
# round runs `mpirun -np H*P ringsync-train` on this host (the reference, the first configuration's
# build), then every configuration across H simulated hosts x P ranks, and prints samples/s, the
# share of the step spent waiting for gradients, and each configuration's ratio to that round's
# reference. This machine's speed swings between launches (one host 49-75k samples/s within an
# hour), so a ratio from one launch each means little: read the medians of the per-round ratios.
#
#   bench/trainer_pairs.sh [--hosts H] [--ranks P] [--rate R] [--pin-hosts] [--rounds N]
#                          [--args "trainer arguments"] "label|build-dir|mpirun -x args[|more trainer arguments]" ...
# e.g. bench/trainer_pairs.sh --pin-hosts --rounds 6 "default|build|" \
#        "chunk|build|-x RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES=411648 -x RINGSYNC_RING_DEPTH_ACROSS_NODES=2"
#      bench/trainer_pairs.sh --hosts 2 --ranks 2 --rate 2gbit --pin-hosts "replicated|build|" "sharded|build||--shard"
# The table also gives each configuration's ratio to the first one in the same round.
# Cleans up after itself; exits 77 where namespaces are refused.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/common.sh"

hosts=2 ranks=1 rate="" pin=0 rounds=5
args="--device cpu --epochs 4 --max-steps 1600 --print-every 0 --no-epoch-eval --quiet"
while (($#)); do
  [[ $1 == --pin-hosts ]] && { pin=1; shift; continue; }  # every host on cores of its own
  case $1 in
    --hosts) hosts=$2 ;;
    --ranks) ranks=$2 ;;
    --rate) rate=$2 ;;
    --rounds) rounds=$2 ;;
    --args) args=$2 ;;
    -*) echo "trainer_pairs.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
  shift 2
done
(($#)) || { echo "trainer_pairs.sh: no configuration given (see the header of $0)" >&2; exit 2; }
SIM_PREFIX=trainer_pairs
source "$ROOT/tests/netns/simulated_hosts.sh"
sim_bench_hosts "$hosts" "$ranks" "$pin" "$rate"

np=$((hosts * ranks))
reference=$(cut -d'|' -f2 <<<"$1")
# metrics <json>: samples/s and the communication wait's share of the step
metrics() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(round(d['samples_per_second']), round(d['comm_wait_share'], 3))" "$1"; }
for ((i = 1; i <= rounds; ++i)); do
  # shellcheck disable=SC2086  # the trainer arguments and the extra mpirun arguments are word lists
  timeout 300 mpirun -np "$np" "$reference/bin/ringsync-train" $args --json "$SIM_WORK/one.json" >"$SIM_WORK/run.txt" 2>&1 ||
    { cat "$SIM_WORK/run.txt"; sim_fail "round $i: the one-host reference failed"; }
  echo "reference $i $(metrics "$SIM_WORK/one.json")" >>"$SIM_WORK/rows.txt"
  for config in "$@"; do
    IFS='|' read -r label build extra trainerExtra <<<"$config"
    # shellcheck disable=SC2086
    sim_mpirun "$np" 300 -x RINGSYNC_TIMEOUT_SECONDS=60 $extra "$build/bin/ringsync-train" $args $trainerExtra --json "$SIM_WORK/two.json" \
      >"$SIM_WORK/run.txt" 2>&1 || { cat "$SIM_WORK/run.txt"; sim_fail "$label, round $i failed"; }
    echo "$label $i $(metrics "$SIM_WORK/two.json")" >>"$SIM_WORK/rows.txt"
  done
done
echo "## ringsync-train, $hosts hosts x $ranks ranks${rate:+, link $rate}$( ((pin)) && echo ", hosts pinned") against mpirun -np $np on one host; $rounds rounds"
echo "## trainer arguments: $args"
python3 - "$SIM_WORK/rows.txt" "$@" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
reference = {r[1]: float(r[2]) for r in rows if r[0] == "reference"}
first = sys.argv[2].split("|")[0]
firstByRound = {r[1]: float(r[2]) for r in rows if r[0] == first}
print(f"| configuration | samples/s (median) | comm wait (median) | ratio to one host, per round | median ratio | ratio to {first}, per round | median |")
print("|---|---:|---:|---|---:|---|---:|")
one = [r for r in rows if r[0] == "reference"]
print(f"| one host | {statistics.median(float(r[2]) for r in one):.0f} | {statistics.median(float(r[3]) for r in one):.3f} | | |")
for config in sys.argv[2:]:
    label = config.split("|")[0]
    mine = [r for r in rows if r[0] == label]
    ratios = [float(r[2]) / reference[r[1]] for r in mine]
    toFirst = [float(r[2]) / firstByRound[r[1]] for r in mine]
    print(f"| {label} | {statistics.median(float(r[2]) for r in mine):.0f} | "
          f"{statistics.median(float(r[3]) for r in mine):.3f} | {' '.join(f'{x:.2f}' for x in ratios)} | "
          f"{statistics.median(ratios):.2f} | {' '.join(f'{x:.2f}' for x in toFirst)} | {statistics.median(toFirst):.2f} |")
PY
