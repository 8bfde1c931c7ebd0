#!/usr/bin/env bash
# The main job: installs what is missing, builds, then
#   1. ringsync-train across 2 ranks: synchronous data-parallel training of a 784-256-128-10 MLP on
#      Fashion-MNIST (Debian's dataset-fashion-mnist), gradients averaged by ringsync every step;
#   2. a short all-reduce bandwidth sweep, ringsync beside Open MPI's MPI_Allreduce in the same run.
set -euo pipefail
source "$(dirname "$0")/common.sh"

"$ROOT/scripts/setup.sh"
configure_and_build "$ROOT/build" >/dev/null
echo "== built $ROOT/build"

echo "== 1. mpirun -np 2 build/bin/ringsync-train (20 epochs, global batch 128)"
mpirun -np 2 "$ROOT/build/bin/ringsync-train" --print-every 200 --json "$ROOT/build/demo-train.json"

echo
echo "== 2. mpirun -np 2 build/bin/allreduce_perf -b 8 -e 64M -f 8 --compare mpi"
mpirun -np 2 "$ROOT/build/bin/allreduce_perf" -b 8 -e 64M -f 8 -c 1 --compare mpi
echo "== demo done: metrics in build/demo-train.json"
