#!/usr/bin/env bash
# Runs one MPI program across simulated hosts (tests/netns/simulated_hosts.sh: network namespaces,
# MPI over TCP on veth pairs, an optional tbf rate cap), for the benches that allreduce_perf's
# multihost.sh does not cover: fusion_perf, scaling_perf, ringsync-train. Prints the program's
# output; cleans up after itself; exits 77 where namespaces are refused.
#
#   bench/multihost_run.sh [--hosts H] [--ranks P] [--rate R] [--timeout S] [--pin-hosts]
#                          -- <program> [args...]
# e.g. bench/multihost_run.sh --hosts 2 --ranks 1 -- build/bin/fusion_perf -w 1 -n 5
#      bench/multihost_run.sh --hosts 2 --ranks 1 -- build/bin/ringsync-train --epochs 1 --json out.json
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/scripts/common.sh"

hosts=2 ranks=1 rate="" pin=0 limit=600
while (($#)); do
  [[ $1 == --pin-hosts ]] && { pin=1; shift; continue; }  # every host on cores of its own
  case $1 in
    --hosts) hosts=$2 ;;
    --ranks) ranks=$2 ;;
    --rate) rate=$2 ;;
    --timeout) limit=$2 ;;
    --) shift; break ;;
    *) echo "multihost_run.sh: unknown option '$1' (the program goes after --)" >&2; exit 2 ;;
  esac
  shift 2
done
(($#)) || { echo "multihost_run.sh: no program given (see the header of $0)" >&2; exit 2; }
SIM_PREFIX=multihost_run
source "$ROOT/tests/netns/simulated_hosts.sh"
sim_bench_hosts "$hosts" "$ranks" "$pin" "$rate"
sim_mpirun $((hosts * ranks)) "$limit" -x RINGSYNC_TIMEOUT_SECONDS=60 "$@"
