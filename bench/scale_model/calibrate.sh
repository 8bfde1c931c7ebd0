#!/usr/bin/env bash
# Calibrates the scale model and checks it: runs allreduce_perf across simulated hosts (network
# namespaces, tests/netns/simulated_hosts.sh), each host's link capped by tbf, then
# calibrate.py fits alpha, beta (and the per-message overhead) to the 2-host runs, gamma to one
# host's, and predicts the other layouts, with the error per size and which algorithm is fastest, measured
# and predicted. Meant for a quiet machine: the figures are noise while others compile.
#
#   bench/scale_model/calibrate.sh [--build DIR] [--rate 1gbit] [--launches 3] [--out DIR]
#                                  [--layouts "2x1 4x1 8x1 4x2"] [--quick] [--no-fit] [--update]
#
# Per layout (hosts x ranks per host, every host on cores of its own: --pin-hosts):
#   capped at --rate: every algorithm the layout can take forced (RINGSYNC_ALGO=ring,
#     recursive_doubling, rabenseifner, direct, hierarchical) and the automatic choice, 8 B - 64 MiB in two sweeps
#     (small sizes with more iterations)
#   uncapped: the ring at 4-64 MiB, to show what binds: if the uncapped run is not clearly faster
#     than the capped one, the cores bind, not the link (then lower --rate)
# One host, no namespaces: copy_bandwidth (memory copy rate), a 2-rank 8 B all-reduce (one
# shared-memory round) and 2-rank direct all-reduces of 256 KiB-2 MiB (the reduction rate, gamma). Results: --out (default /tmp/ringsync-calibration-<time>), one JSON per launch.
# --quick: small ranges and one launch, to test the script. --update: calibrate.py writes the fitted
# values into params.json (calibrated_<rate>), which scale_model.py reads. Needs root (namespaces); exits 77
# where they are refused. Which algorithm a forced run really took (a forced one that cannot carry
# a size falls back) is read from build/bin/selection_table by calibrate.py, never assumed.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$here/../.." && pwd)
source "$ROOT/scripts/common.sh"

build=$ROOT/build rate=1gbit launches="" out="" layouts="2x1 4x1 8x1 4x2" quick=0 fit=1 update=0 one=""
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --layouts) layouts=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --no-fit) fit=0; shift ;;
    --update) update=1; shift ;;  # write the fitted values into params.json
    --one-layout) one=$2; shift 2 ;;  # internal: run one layout's sweeps (its own namespaces)
    *) echo "calibrate.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
launches=${launches:-$( ((quick)) && echo 1 || echo 3)}
perf=$build/bin/allreduce_perf
[[ -x $perf && -x $build/bin/selection_table && -x $build/bin/copy_bandwidth ]] ||
  { echo "calibrate.sh: build allreduce_perf, copy_bandwidth and selection_table in $build first" >&2; exit 2; }
out=${out:-/tmp/ringsync-calibration-$(date +%Y%m%d-%H%M%S)}

# Sweeps by name: small sizes with many iterations, large ones with few; recursive doubling and
# the direct round take at most 4 MiB (larger forced calls fall back), "bind" is the what-binds check.
# The small sweeps warm up for 300 calls: tbf lends an idle link a 512 KB burst at the uncapped
# rate, and a sweep of small messages that never drains it measures the veth, not the cap (the
# large sweeps drain it in their first call).
declare -A sizes
if ((quick)); then
  sizes=([small]="-b 8 -e 64K -f 8 -n 10 -w 300" [large]="-b 256K -e 1M -f 4 -n 2 -w 1"
         [large4m]="-b 256K -e 1M -f 4 -n 2 -w 1" [bind]="-b 1M -e 1M -n 2 -w 1")
else
  sizes=([small]="-b 8 -e 256K -f 2 -n 40 -w 300" [large]="-b 512K -e 64M -f 2 -n 4 -w 1"
         [large4m]="-b 512K -e 4M -f 2 -n 4 -w 1" [bind]="-b 4M -e 64M -f 4 -n 3 -w 1")
fi

# ---- one layout, in a process of its own (the namespaces go when it exits) ----------------------
if [[ -n $one ]]; then
  hosts=${one%x*} ranks=${one#*x}
  SIM_PREFIX=calibrate
  source "$ROOT/tests/netns/simulated_hosts.sh"
  sim_bench_hosts "$hosts" "$ranks" 1 ""
  dir=$out/$one
  mkdir -p "$dir"
  np=$((hosts * ranks))
  # label|environment for every algorithm this layout can take (the automatic choice first)
  configs=("auto|" "ring|RINGSYNC_ALGO=ring" "recursive_doubling|RINGSYNC_ALGO=recursive_doubling"
           "rabenseifner|RINGSYNC_ALGO=rabenseifner")
  ((np <= 16)) && configs+=("direct|RINGSYNC_ALGO=direct")
  ((ranks > 1)) && configs+=("hierarchical|RINGSYNC_ALGO=hierarchical")
  sweep() {  # <label> <env> <link> <launch> <sweep name>
    local label=$1 env=$2 link=$3 i=$4 part=$5 json
    json=$dir/$label.$link.$part.$i.json
    # shellcheck disable=SC2086  # the size flags are a word list
    sim_mpirun "$np" 600 -x RINGSYNC_TIMEOUT_SECONDS=120 ${env:+-x $env} "$perf" ${sizes[$part]} -c 0 --json "$json" \
      >"$dir/$label.$link.$part.$i.txt" 2>&1 || { cat "$dir/$label.$link.$part.$i.txt"; sim_fail "$one $label $link failed"; }
    sim_say "$one: $label, $link, $part sizes, launch $i done"
  }
  both() {  # <label|env> <link> <launch>: the small sizes and the large ones it takes
    local label=${1%%|*} env=${1#*|}
    sweep "$label" "$env" "$2" "$3" small
    case $label in
      recursive_doubling | direct) sweep "$label" "$env" "$2" "$3" large4m ;;
      *) sweep "$label" "$env" "$2" "$3" large ;;
    esac
  }
  uncap() {
    local i
    for i in "${!sim_ns[@]}"; do ip netns exec "${sim_ns[i]}" tc qdisc del dev "${sim_veth[i]}" root 2>/dev/null; done
  }
  for ((i = 1; i <= launches; ++i)); do
    uncap
    sweep ring RINGSYNC_ALGO=ring uncapped "$i" bind
    sim_hosts_cap_rate "$rate" || sim_fail "cannot cap the links at $rate"
    # interleaved, so that a slow spell of the machine lands on every algorithm
    for config in "${configs[@]}"; do both "$config" capped "$i"; done
    sweep ring RINGSYNC_ALGO=ring capped "$i" bind
  done
  exit 0
fi

# ---- the whole calibration ------------------------------------------------------------------------
mkdir -p "$out"
echo "calibrate.sh: results in $out (rate $rate, $launches launch(es), layouts $layouts$( ((quick)) && echo ", quick"))"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
  echo "rate: $rate"
  echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "cores: $(nproc)"
  echo "TCP autocorking in the hosts: $([[ ${SIM_TCP_AUTOCORK:-1} == 0 ]] && echo "off (SIM_TCP_AUTOCORK=0)" || echo "the kernel's default")"
} >"$out/machine.txt"
# One host: the memory copy rate (beta_shm) and one shared-memory round (alpha_shm).
mpirun -np 1 "$build/bin/copy_bandwidth" -b 256K -e 16M -f 4 -n 9 >"$out/copy_bandwidth.txt" 2>&1 ||
  { cat "$out/copy_bandwidth.txt"; exit 1; }
mpirun -np 2 "$perf" -b 8 -e 8 -n 2000 -w 100 -c 0 --json "$out/one_host_np2.json" >"$out/one_host_np2.txt" 2>&1 ||
  { cat "$out/one_host_np2.txt"; exit 1; }
# gamma: the direct round on one host, whose every rank copies S into its slot and reduces 2 x S
mpirun -np 2 -x RINGSYNC_ALGO=direct "$perf" -b 256K -e 2M -f 2 -n 50 -w 5 -c 0 --json "$out/one_host_direct.json" \
  >"$out/one_host_direct.txt" 2>&1 || { cat "$out/one_host_direct.txt"; exit 1; }
for layout in $layouts; do
  "$0" --one-layout "$layout" --build "$build" --rate "$rate" --launches "$launches" --out "$out" \
    $( ((quick)) && echo --quick) || exit $?
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
((fit)) || exit 0
python3 "$here/calibrate.py" --data "$out" --selection "$build/bin/selection_table" --rate "$rate" \
  $( ((update)) && echo --update "$here/params.json")
