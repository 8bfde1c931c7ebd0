#!/usr/bin/env bash
# Across simulated hosts: allreduce_perf --compare mpi on H hosts x P ranks (network namespaces
# from tests/netns/simulated_hosts.sh, MPI over TCP between them), optionally with every host's
# sending rate capped by tbf. Each launch is repeated with Open MPI's default collectives and with
# its hierarchical coll/han (OMPI_MCA_coll_han_priority=100), interleaved (default, HAN, default,
# HAN, ...) so that a slow spell of a shared machine lands on both; then one table of medians with
# the link rate beside the bus bandwidth (bench/multihost_table.py). ringsync runs in every launch,
# so each ratio is taken within a launch. Needs root (namespaces); skips with exit 77 otherwise.
#
#   bench/multihost.sh [--hosts H] [--ranks P] [--rate 2gbit] [--launches N] [--build DIR]
#                      [--out DIR] [--sizes "-b 8 -e 16M -f 4 -n 20 -w 5"] [--pin-hosts]
#                      [--tool allreduce_perf|reducescatter_perf|allgather_perf|broadcast_perf]
#                      [-- extra mpirun args]
# --pin-hosts gives every simulated host cores of its own (sim_hosts_pin in simulated_hosts.sh);
# by default the hosts' ranks share all of this machine's cores. SIM_TCP_AUTOCORK=0 in the
# environment turns the kernel's TCP autocorking off in every host (sim_bench_hosts says why).
# e.g. bench/multihost.sh --hosts 2 --ranks 2 --rate 2gbit --launches 3
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/common.sh"

hosts=2 ranks=2 rate="" pin=0 launches=3 build=$ROOT/build out="" sizes="-b 8 -e 16M -f 4 -n 20 -w 5" limit=300
tool=allreduce_perf
while (($#)); do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;  # seconds per launch
    --tool) tool=$2; shift 2 ;;    # the nccl-tests-style bench to run (its --compare mpi baseline)
    --pin-hosts) pin=1; shift ;;
    --) shift; break ;;
    *) echo "multihost.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
SIM_PREFIX=multihost
source "$ROOT/tests/netns/simulated_hosts.sh"
perf=$build/bin/$tool
[[ -x $perf ]] || sim_fail "$perf is not built (cmake --build $build --target $tool)"
out=${out:-$SIM_WORK/results}
mkdir -p "$out"

sim_bench_hosts "$hosts" "$ranks" "$pin" "$rate"
link=${rate:-uncapped}
np=$((hosts * ranks))
# Every launch runs the same sweep; only Open MPI's collective component differs.
declare -A variant=([default]="" [han]="-x OMPI_MCA_coll_han_priority=100")
for ((i = 1; i <= launches; ++i)); do
  for name in default han; do
    json=$out/$name.$i.json
    # shellcheck disable=SC2086  # the size flags and the variant are word lists
    if ! sim_mpirun "$np" "$limit" -x RINGSYNC_TIMEOUT_SECONDS=60 ${variant[$name]} "$@" \
        "$perf" $sizes -c 1 --compare mpi --json "$json" >"$out/$name.$i.txt" 2>&1; then
      cat "$out/$name.$i.txt"
      sim_fail "launch $i ($name) failed"
    fi
    grep -q "Out of bounds values : 0 OK" "$out/$name.$i.txt" || { cat "$out/$name.$i.txt"; sim_fail "launch $i ($name) found wrong values"; }
    sim_say "launch $i/$launches ($name MPI collectives) done"
  done
done
echo "## $hosts hosts x $ranks ranks, link $link, $launches launches each (medians)$( ((pin)) && echo ", hosts pinned to cores of their own")"
echo "command: ${SIM_TCP_AUTOCORK:+SIM_TCP_AUTOCORK=$SIM_TCP_AUTOCORK }bench/multihost.sh --hosts $hosts --ranks $ranks ${rate:+--rate $rate }--launches $launches --sizes \"$sizes\"$( ((pin)) && echo " --pin-hosts")${*:+ -- $*}"
python3 "$here/multihost_table.py" --link "$link" --ranks "$np" \
  --default "$out"/default.[0-9]*.json --han "$out"/han.[0-9]*.json
