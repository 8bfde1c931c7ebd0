#!/usr/bin/env bash
# Launch-to-launch spread of any nccl-tests-style bench: N launches of one command, each with its own
# --json, then bench/median_table.py's table (per size: median [min-max] of the times, of the
# per-launch ratios against the baseline measured in the same launch, and every ratio).
#   bench/spread.sh [-n LAUNCHES] [-p RANKS] [-b BUILD] [-o OUT] -- TOOL [TOOL ARGS...]
#   bench/spread.sh -n 5 -p 2 -- reducescatter_perf -b 8 -e 64M -f 8 --compare mpi
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
launches=5 ranks=2 build=$ROOT/build out=""
while (($#)); do
  case $1 in
    -n) launches=$2; shift ;;
    -p) ranks=$2; shift ;;
    -b) build=$2; shift ;;
    -o) out=$2; shift ;;
    --) shift; break ;;
    *) echo "usage: $0 [-n LAUNCHES] [-p RANKS] [-b BUILD] [-o OUT] -- TOOL [ARGS...]" >&2; exit 2 ;;
  esac
  shift
done
(($#)) || { echo "$0: name the bench tool after --" >&2; exit 2; }
tool=$1
shift
out=${out:-$build/bench-results/spread-$tool-np$ranks}
mkdir -p "$out"
rm -f "$out"/launch.*.json
for i in $(seq 1 "$launches"); do
  timeout 900 mpirun -np "$ranks" "$build/bin/$tool" "$@" --json "$out/launch.$i.json" >"$out/launch.$i.txt"
done
echo "# $launches launches of: mpirun -np $ranks $tool $*"
python3 "$ROOT/bench/median_table.py" "$out"/launch.*.json --json-out "$out/median.json"
