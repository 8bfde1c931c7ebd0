#!/usr/bin/env bash
# One test of the timeline over several communicators: timeline_communicators MODE under mpirun
# with RINGSYNC_TIMELINE in a fresh folder, timed, then check_communicators.py.
#   run_communicators_test.sh <driver> <mode> <ranks> -- <mpirun prefix ...>
set -uo pipefail
driver=$1 mode=$2 ranks=$3
shift 4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ringsync-timeline-XXXXXX)
trap 'rm -rf "$dir"' EXIT
start=$(date +%s%N)
RINGSYNC_TIMELINE="$dir/trace.json" "$@" -np "$ranks" "$driver" "$mode" >"$dir/out" 2>"$dir/err"
rc=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
elapsed=$((elapsed_ms / 1000)).$(printf %03d $((elapsed_ms % 1000)))
tail -n 20 "$dir/err"
((rc == 0)) || { echo "run_communicators_test: mpirun exited with $rc"; exit 1; }
python3 "$here/check_communicators.py" "$mode" "$dir/trace.json" "$ranks" "$dir/err" "$elapsed"
