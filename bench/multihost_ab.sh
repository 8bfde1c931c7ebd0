#!/usr/bin/env bash
# A/B across simulated hosts: the same allreduce_perf (or --tool) sweep under several configurations (another
# build, other environment variables), launched interleaved (A, B, C, A, B, C, ...) on one set of
# hosts, then per configuration and size the median of ringsync's out-of-place time and busbw.
# For settings that act before or outside one launch (how ranks wait, MPI's own progress loop),
# which allreduce_perf cannot compare within a launch.
#
#   bench/multihost_ab.sh [--hosts H] [--ranks P] [--rate R] [--launches N] [--pin-hosts]
#                         [--sizes "-b 8 -e 8 -n 200 -w 20"] [--tool allgather_perf|reducescatter_perf|...]
#                         "label|build-dir|mpirun -x args" ...
# e.g. bench/multihost_ab.sh --hosts 2 --ranks 1 "new|build|" "spin|build|-x RINGSYNC_SPIN_WAIT=1"
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/common.sh"
hosts=2 ranks=1 rate="" pin=0 launches=3 sizes="-b 8 -e 8 -n 200 -w 20" tool=allreduce_perf
while [[ ${1:-} == --* ]]; do
  [[ $1 == --pin-hosts ]] && { pin=1; shift; continue; }  # every host on cores of its own
  case $1 in
    --hosts) hosts=$2 ;;
    --ranks) ranks=$2 ;;
    --rate) rate=$2 ;;
    --launches) launches=$2 ;;
    --sizes) sizes=$2 ;;
    --tool) tool=$2 ;;  # the nccl-tests-style bench to run
    *) echo "multihost_ab.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
(($#)) || { echo "multihost_ab.sh: no configuration given (see the header of $0)" >&2; exit 2; }
SIM_PREFIX=multihost_ab
source "$ROOT/tests/netns/simulated_hosts.sh"
sim_bench_hosts "$hosts" "$ranks" "$pin" "$rate"
for ((i = 1; i <= launches; ++i)); do
  for config in "$@"; do
    IFS='|' read -r label build extra <<<"$config"
    # shellcheck disable=SC2086  # the extra mpirun arguments and the size flags are word lists
    sim_mpirun $((hosts * ranks)) 300 -x RINGSYNC_TIMEOUT_SECONDS=60 $extra "$build/bin/$tool" $sizes -c 1 \
      >"$SIM_WORK/run.txt" 2>&1 || { cat "$SIM_WORK/run.txt"; sim_fail "$label, launch $i failed"; }
    grep -q "Out of bounds values : 0 OK" "$SIM_WORK/run.txt" || { cat "$SIM_WORK/run.txt"; sim_fail "$label: wrong values"; }
    # size, out-of-place time (us) and busbw of every row (rows start with the size: Open MPI's own
    # warnings, e.g. "[hostA:123] plm:rsh: Warning: setpgid(...) failed ...", are no rows)
    awk -v label="$label" '$1 ~ /^[0-9]+$/ && NF >= 9 { print label, $1, $6, $8 }' "$SIM_WORK/run.txt" >>"$SIM_WORK/rows.txt"
  done
done
echo "## $tool, $hosts hosts x $ranks ranks${rate:+, link $rate}$( ((pin)) && echo ", hosts pinned")${SIM_TCP_AUTOCORK:+, SIM_TCP_AUTOCORK=$SIM_TCP_AUTOCORK}, $launches interleaved launches per configuration (medians)"
echo "| configuration | size (B) | ringsync time (us) | busbw (GB/s) | times of the launches (us) |"
echo "|---|---:|---:|---:|---|"
python3 - "$SIM_WORK/rows.txt" "$@" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
for config in sys.argv[2:]:
    label = config.split("|")[0]
    for size in dict.fromkeys(r[1] for r in rows if r[0] == label):
        mine = [r for r in rows if r[0] == label and r[1] == size]
        times = [float(r[2]) for r in mine]
        print(f"| {label} | {size} | {statistics.median(times):.1f} | "
              f"{statistics.median(float(r[3]) for r in mine):.3f} | {' '.join(f'{t:.0f}' for t in times)} |")
PY
