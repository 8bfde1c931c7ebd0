#!/usr/bin/env bash
# Issue 40's targets for Rabenseifner's all-reduce, measured: H simulated hosts x P ranks (default
# 8 x 1), every host on cores of its own, its link capped by tbf (default 1gbit), N launches
# (default 5) of each configuration, interleaved so that a slow spell of the machine lands on all:
#   default       ringsync's automatic choice beside Open MPI's default all-reduce (--compare mpi)
#   han           the same beside Open MPI's HAN (OMPI_MCA_coll_han_priority=100)
#   doubling, ring, hierarchical, rabenseifner   each forced (RINGSYNC_ALGO): what the selection
#                 took before Rabenseifner (recursive doubling up to 64 KiB among more than two
#                 nodes, then the ring, or the hierarchical all-reduce on nodes of L >= 2 ranks), and
#                 Rabenseifner at every size
#   round         the direct round at 4 B (RINGSYNC_ALGO=direct): what a fingerprint round costs, the
#                 other way to check a call, against the 216 B of call summary each butterfly message
#                 carries instead (the table prints both)
# then rabenseifner_check.py's tables: ringsync against the faster of Open MPI's two per size
# (medians and the spread of the launches; target >= 1.0x at every size 8 B - 64 MiB), and the
# measured gain of the automatic choice over the previous selection against the scale model's
# prediction wherever Rabenseifner is chosen (target: at least half the predicted gain, never a loss).
# SIM_TCP_AUTOCORK=0 in the environment runs the hosts with the kernel's TCP autocorking off (at 8
# hosts with the cap on it stalls recursive doubling and Rabenseifner 40 ms at a time from 64-128
# KiB: RESULTS section 16.17).
# Meant for a quiet machine: figures taken while others compile are noise. Needs root (namespaces);
# exits 77 where they are refused.
#
#   bench/scale_model/rabenseifner_check.sh [--hosts 8] [--ranks 1] [--rate 1gbit] [--launches 5]
#       [--build DIR] [--out DIR] [--set simulated_1gbit] [--quick]
# --quick: 8 B - 1 MiB, one launch, few iterations (to test the script); --set: the model's
# parameters (params.json: simulated_1gbit, or calibrated_1gbit once calibrate.sh --update ran).
# On a quiet machine the full run takes about 15 minutes at 8 x 1 (the 64 MiB calls alone take
# ~1 s each at 1 Gbit/s).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$here/../.." && pwd)
source "$ROOT/scripts/common.sh"

hosts=8 ranks=1 rate=1gbit launches=5 build=$ROOT/build out="" set=simulated_1gbit quick=0
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --set) set=$2; shift 2 ;;
    --quick) quick=1; launches=1; shift ;;
    *) echo "rabenseifner_check.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
perf=$build/bin/allreduce_perf
[[ -x $perf && -x $build/bin/selection_table ]] ||
  { echo "rabenseifner_check.sh: build allreduce_perf and selection_table in $build first" >&2; exit 2; }
out=${out:-/tmp/ringsync-rabenseifner-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"

# Small sizes with many iterations after 300 warm-up calls (they drain the 512 KB burst tbf lends
# an idle link), large ones with few; recursive doubling takes at most 4 MiB (larger forced calls
# fall back).
declare -A sizes
if ((quick)); then
  sizes=([small]="-b 8 -e 64K -f 8 -n 10 -w 300" [large]="-b 256K -e 1M -f 4 -n 2 -w 1" [large4m]="-b 256K -e 1M -f 4 -n 2 -w 1"
         [round]="-b 4 -e 4 -n 50 -w 300")
else
  sizes=([small]="-b 8 -e 256K -f 2 -n 40 -w 300" [large]="-b 512K -e 64M -f 2 -n 4 -w 1"
         [large4m]="-b 512K -e 4M -f 2 -n 4 -w 1" [round]="-b 4 -e 4 -n 500 -w 300")
fi
# label|mpirun arguments|extra allreduce_perf arguments
configs=("default||--compare mpi" "han|-x OMPI_MCA_coll_han_priority=100|--compare mpi"
         "doubling|-x RINGSYNC_ALGO=recursive_doubling|" "ring|-x RINGSYNC_ALGO=ring|"
         "rabenseifner|-x RINGSYNC_ALGO=rabenseifner|")
((ranks > 1)) && configs+=("hierarchical|-x RINGSYNC_ALGO=hierarchical|")

SIM_PREFIX=rabenseifner_check
source "$ROOT/tests/netns/simulated_hosts.sh"
sim_bench_hosts "$hosts" "$ranks" 1 "$rate"
np=$((hosts * ranks))
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
  echo "layout: $hosts hosts x $ranks ranks, link $rate, $launches launch(es)"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "cores: $(nproc)"
  echo "TCP autocorking in the hosts: $([[ ${SIM_TCP_AUTOCORK:-1} == 0 ]] && echo "off (SIM_TCP_AUTOCORK=0)" || echo "the kernel's default")"
} >"$out/machine.txt"
sweep() {  # <label> <mpirun args> <perf args> <launch> <sweep name>
  local label=$1 mpi=$2 extra=$3 i=$4 part=$5 base
  base=$out/$label.$part.$i
  # shellcheck disable=SC2086  # the argument lists are word lists
  sim_mpirun "$np" 600 -x RINGSYNC_TIMEOUT_SECONDS=120 $mpi "$perf" ${sizes[$part]} -c 1 $extra --json "$base.json" \
    >"$base.txt" 2>&1 || { cat "$base.txt"; sim_fail "$label, launch $i ($part sizes) failed"; }
  grep -q "Out of bounds values : 0 OK" "$base.txt" || { cat "$base.txt"; sim_fail "$label: wrong values"; }
}
for ((i = 1; i <= launches; ++i)); do
  for config in "${configs[@]}"; do
    IFS='|' read -r label mpi extra <<<"$config"
    sweep "$label" "$mpi" "$extra" "$i" small
    sweep "$label" "$mpi" "$extra" "$i" "$([[ $label == doubling ]] && echo large4m || echo large)"
  done
  sweep round "-x RINGSYNC_ALGO=direct" "" "$i" round
  sim_say "launch $i/$launches done"
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
cat "$out/machine.txt"
python3 "$here/rabenseifner_check.py" --data "$out" --selection "$build/bin/selection_table" --hosts "$hosts" \
  --ranks "$ranks" --set "$set" --rate "$rate" | tee "$out/tables.md"
