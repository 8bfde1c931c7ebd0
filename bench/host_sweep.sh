#!/usr/bin/env bash
# The host all-reduce figures of bench/RESULTS.md and the README: allreduce_perf --compare mpi at
# np=2 and np=4, with default malloc and with glibc's trim/mmap thresholds raised (which spares
# MPI_Allreduce its per-call page faults), each repeated; medians per size, ratios taken within
# each launch; a PNG of the np=2/np=4 medians.
#   bench/host_sweep.sh [build-dir] [launches] [out-dir]
set -euo pipefail
source "$(dirname "$0")/../scripts/common.sh"
build=${1:-$ROOT/build}
launches=${2:-5}
out=${3:-$ROOT/build/bench-results}
mkdir -p "$out"
tuned="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"

for np in 2 4; do
  for malloc in default tuned; do
    tag="allreduce_np${np}_${malloc}"
    settings=()
    [[ $malloc == tuned ]] && settings=("GLIBC_TUNABLES=$tuned")
    for i in $(seq 1 "$launches"); do
      env "${settings[@]}" timeout 600 mpirun -np "$np" "$build/bin/allreduce_perf" -b 8 -e 256M -f 4 -c 1 --compare mpi \
        --json "$out/$tag.$i.json" > "$out/$tag.$i.txt"
    done
    echo "## np=$np, $malloc malloc"
    python3 "$ROOT/bench/median_table.py" "$out/$tag".[0-9]*.json --json-out "$out/$tag.median.json"
    echo
  done
done
python3 "$ROOT/bench/plot.py" "$out/allreduce_np2_default.median.json" "$out/allreduce_np4_default.median.json" \
  -o "$out/allreduce_host.png"
echo "tables and JSON in $out; figure $out/allreduce_host.png"
