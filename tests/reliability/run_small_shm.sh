#!/usr/bin/env bash
# Runs an MPI job in a mount namespace whose /dev/shm is a fresh tmpfs of a given size (a container's
# /dev/shm is 64 MB by default), then checks what RINGSYNC_LOG=info said about it.
#   run_small_shm.sh <tmpfs size, e.g. 64m> <ranks> <most /dev/shm notes per rank> <least notes in all> \
#                    -- <mpiexec> <program> [args...]
# The job runs with RINGSYNC_LOG=info; every line naming /dev/shm is counted: each process says so at
# most <most> times (once: 1), and the job at least <least> times. Open MPI's own shared-memory
# transport (vader) keeps its backing files in /dev/shm, as in a container. Exit 77 (CTest's skip)
# where this machine refuses a mount namespace or a tmpfs mount.
set -uo pipefail
size=$1 ranks=$2 most=$3 least=$4
shift 5
work=$(mktemp -d /tmp/ringsync-shm-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! unshare --mount sh -c "mount -t tmpfs -o size=$size tmpfs /dev/shm" 2>"$work/err"; then
  echo "run_small_shm: SKIPPED: cannot mount a tmpfs on /dev/shm in a mount namespace: $(head -1 "$work/err")"
  exit 77
fi
# The namespace's /dev/shm is private to the job: nothing it leaves there outlives it.
mpiexec=$1
shift
RINGSYNC_LOG=info unshare --mount sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm && df -h /dev/shm | tail -1 &&
  exec "$@"' "$size" "$mpiexec" -np "$ranks" "$@" >"$work/out" 2>"$work/err"
rc=$?
cat "$work/out"
grep '/dev/shm' "$work/err"
# Errors and anything unexpected (not the per-call info lines nor the straggler reports).
grep -v '\] info: \|\] report: \|^  rank ' "$work/err" | tail -n 40
((rc == 0)) || { echo "run_small_shm: FAILED: the job exited with $rc"; exit 1; }
notes=$(grep -c '/dev/shm' "$work/err")
# Each line carries the rank that printed it: no rank may say it more than <most> times.
worst=$(grep -o '^\[ringsync rank [0-9]*\] info: .*/dev/shm' "$work/err" | sed 's/\].*//' | sort | uniq -c | sort -rn |
  awk 'NR == 1 {print $1}')
worst=${worst:-0}
((worst <= most)) || { echo "run_small_shm: FAILED: a rank reported /dev/shm $worst times (at most $most)"; exit 1; }
((notes >= least)) || { echo "run_small_shm: FAILED: $notes lines name /dev/shm, expected at least $least"; exit 1; }
echo "run_small_shm: passed ($notes line(s) naming /dev/shm, at most $worst per rank)"
