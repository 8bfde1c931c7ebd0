#!/usr/bin/env bash
# Runs an MPI job that injects a fault and passes iff the job FAILED (non-zero exit status) within
# <limit> seconds of the fault, and its output or "exit status <rc>" matches <pattern> (how it ended). The faulty rank
# prints "FAULT-AT <unix seconds>"; the time from there to the end of mpirun is the time-to-error.
#   expect_job_failure.sh <name> <limit-seconds> <pattern> -- <command ...>
set -uo pipefail

if (($# < 5)) || [[ $4 != "--" ]]; then
  echo "usage: $0 <name> <limit-seconds> <pattern> -- <command ...>" >&2
  exit 2
fi
name=$1 limit=$2 pattern=$3
shift 4

log=$(mktemp /tmp/ringsync-fault-XXXXXX.log)
trap 'rm -f "$log"' EXIT
# The job itself gets a hard limit well past <limit>: a hang fails this test instead of CTest's.
hard_limit=$((limit + 30))
start=$(date +%s.%N)
timeout -k 5 "$hard_limit" "$@" >"$log" 2>&1
rc=$?
end=$(date +%s.%N)
cat "$log"
echo "----"

fail() {
  echo "[faults] $name: FAILED: $*"
  exit 1
}
fault_at=$(awk '/^FAULT-AT / { print $2; exit }' "$log")
[[ -n $fault_at ]] || fail "the fault was never injected (no FAULT-AT line); rc=$rc"
elapsed=$(awk -v a="$fault_at" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
total=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
# timeout(1) says 124 when it had to stop the job (mpirun itself exits 128+9 when a rank was killed).
((rc == 124)) && fail "the job did not end within ${hard_limit} s and was stopped (a hang)"
((rc != 0)) || fail "the job exited 0 after the fault"
awk -v e="$elapsed" -v l="$limit" 'BEGIN { exit !(e <= l) }' ||
  fail "the job ended ${elapsed} s after the fault, more than ${limit} s"
# The exit status counts as part of the output: Open MPI's own report of an abort is itself flaky
# here (show_help sometimes fails with "Data unpack would read past end of buffer"). -a: Open MPI 5
# writes NUL bytes into its abort report, and grep would only say "binary file matches".
how=$( { cat "$log"; echo "exit status $rc"; } | grep -a -E -m 3 "$pattern" | tr -s ' \n' ' ')
[[ -n $how ]] || fail "the output does not say how it ended (expected /$pattern/)"
echo "[faults] $name: job ended with exit status $rc, ${elapsed} s after the fault (${total} s in all): $how"
