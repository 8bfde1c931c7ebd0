#!/usr/bin/env bash
# One timeline test: runs timeline_driver MODE under mpirun with RINGSYNC_TIMELINE in a fresh
# folder, requires the exit status the mode ends with, then check_timeline.py.
#   run_timeline_test.sh <driver> <mode> <ranks> <expected-exit-status> -- <mpirun prefix ...>
set -uo pipefail
driver=$1 mode=$2 ranks=$3 want=$4
shift 5
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/ringsync-timeline-XXXXXX)
trap 'rm -rf "$dir"' EXIT
if [[ $mode == report ]]; then
  RINGSYNC_LOG=info "$@" -np "$ranks" "$driver" straggler >"$dir/out" 2>"$dir/err"
else
  RINGSYNC_TIMELINE="$dir/trace.json" "$@" -np "$ranks" "$driver" "$mode" >"$dir/out" 2>"$dir/err"
fi
rc=$?
tail -n 20 "$dir/err"
if [[ $mode == report ]]; then want=0; fi
if ((rc != want)) && ! { ((want != 0)) && ((rc != 0)); }; then
  echo "run_timeline_test: mpirun exited with $rc, expected $want"
  exit 1
fi
python3 "$here/check_timeline.py" "$mode" "$dir/trace.json" "$ranks" "$dir/err"
