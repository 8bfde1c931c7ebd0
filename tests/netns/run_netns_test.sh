#!/usr/bin/env bash
# Across nodes on one machine: 4 ranks on two simulated hosts. Two network namespaces
# ("hostA", "hostB", each with its own hostname via a UTS namespace) are joined by a veth pair;
# mpirun runs on hostA and starts hostB's daemon through plm_rsh_agent = a script that enters
# hostB's namespace (what ssh would do on a cluster); MPI traffic is TCP over the veth.
#   1. all-reduce / broadcast / all-gather exact across the hosts (test_netns_collectives), and
#      bytes really crossed the veth;
#   1b. (hierarchical) the hierarchical all-reduce: exact, chosen, mismatches (test_netns_hierarchical);
#   1c. (doubling, 2 hosts x 2 ranks; doubling_one_per_host, 2 hosts x 1 rank) recursive doubling:
#       exact, chosen up to its limit, mismatches (test_netns_recursive_doubling); with one rank
#       per host also the ring's whole chunks: exact, mismatches (test_netns_ring);
#   2. the trainer's equivalence check (test_trainer_equivalence) at 4 ranks, when it is built;
#   3. a tbf rate cap on the link: allreduce_perf still completes, busbw reported (with the
#      unimpaired link's figures from the same run for comparison), when it is built; then again
#      (capped where tbf allowed it) with every host pinned to cores of its own (sim_hosts_pin,
#      bench/multihost.sh --pin-hosts), after checking that each rank runs on its host's cores only;
#   4. (link_down, 2 hosts x 1 rank; link_down_hierarchical and link_down_rabenseifner, 2 x 2, the
#      hierarchical all-reduce or Rabenseifner's forced) hostB's link goes down in the
#      middle of all-reduces: every rank raises TimeoutError naming ranks of the other host within
#      RINGSYNC_TIMEOUT_SECONDS + 2 s.
#   5. (scale_8x1, scale_4x2, scale_2221, scale_3122, scale_8x2: 8 hosts x 1 rank, 4 x 2, 4 hosts
#      holding 2+2+2+1 and 3+1+2+2, 8 hosts x 2) every algorithm x type x op x uneven counts at 7-16 ranks, the automatic choice there, round-robin
#      numbering, mismatches (test_netns_scale).
# The hosts come from simulated_hosts.sh (shared with bench/multihost.sh). Everything it creates
# is removed on exit, failure included. Exit 77 (CTest skip) when the environment refuses
# namespaces. Each part builds its own pair of hosts, so CTest runs the parts as separate entries,
# each well under a minute even when the 4 ranks share a few cores over TCP.
#   run_netns_test.sh <bin-dir> [collectives|hierarchical|doubling|doubling_one_per_host|trainer|perf|link_down|
#                                link_down_hierarchical|link_down_rabenseifner|scale_8x1|scale_4x2|scale_2221|
#                                scale_3122|scale_8x2|all]
set -uo pipefail

bin=${1:?usage: run_netns_test.sh <bin-dir> [part], see the header}
part=${2:-all}
source "$(dirname "${BASH_SOURCE[0]}")/simulated_hosts.sh"
work=$SIM_WORK
say() { sim_say "$@"; }
fail() { sim_fail "$@"; }

run_mpi() {
  sim_mpirun 4 120 -x RINGSYNC_TIMEOUT_SECONDS=60 "$@"
}

veth_bytes() { sim_hosts_veth_bytes; }

run_collectives() {
  local before after
  before=$(veth_bytes)
  run_mpi "$bin/test_netns_collectives" >"$work/collectives.log" 2>&1
  local rc=$?
  after=$(veth_bytes)
  cat "$work/collectives.log"
  ((rc == 0)) || fail "collectives across the two hosts failed (exit $rc)"
  local crossed=$((after - before))
  # The 300001-element all-reduces alone move megabytes across the ring's cross-host edges.
  ((crossed > 10000000)) || fail "only $crossed bytes crossed the veth: the ranks did not talk over it"
  say "collectives: passed; $crossed bytes crossed the veth"
}

run_hierarchical() {
  run_mpi "$bin/test_netns_hierarchical" >"$work/hierarchical.log" 2>&1
  local rc=$?
  tail -n 20 "$work/hierarchical.log"
  ((rc == 0)) || fail "the hierarchical all-reduce across the two hosts failed (exit $rc)"
  say "hierarchical all-reduce: exact, chosen above the direct limit, mismatches raised on every rank"
}

# run_algorithm_test <ranks> <test binary> <what it checks> [mpirun arguments...]
# run_algorithm_test <ranks> <binary> <what> [mpirun options]; ALGORITHM_TEST_LIMIT: seconds (120).
run_algorithm_test() {
  local log=$work/$2.log
  sim_mpirun "$1" "${ALGORITHM_TEST_LIMIT:-120}" -x RINGSYNC_TIMEOUT_SECONDS=60 "${@:4}" "$bin/$2" >"$log" 2>&1
  local rc=$?
  tail -n 20 "$log"
  ((rc == 0)) || fail "$3 across the simulated hosts ($1 ranks) failed (exit $rc)"
  say "$3 ($1 ranks): passed"
}
run_doubling() { run_algorithm_test "$1" test_netns_recursive_doubling "recursive doubling"; }
run_ring() {
  run_algorithm_test "$1" test_netns_ring "the ring's whole chunks" -x RINGSYNC_LOG=info
  # The log names each all-reduce's placement: the whole chunks must really have been sent whole
  # (200704 floats: the trainer's last bucket), and chunks past the bounds in segments.
  local log=$work/test_netns_ring.log
  grep -q "count=200704 float32 sum .*algorithm ring.*each chunk as one message" "$log" ||
    fail "no all-reduce of 200704 floats was sent as whole chunks (RINGSYNC_LOG=info lines in $log)"
  ! grep -q "count=204801 float32 sum .*each chunk as one message" "$log" ||
    fail "chunks past the upper bound were sent whole"
  say "the ring's whole chunks: chosen at the trainer's bucket, not past the bound"
}

run_trainer() {
  if [[ ! -x $bin/test_trainer_equivalence ]]; then
    say "trainer equivalence: SKIPPED (test_trainer_equivalence is not built)"
    return
  fi
  run_mpi "$bin/test_trainer_equivalence" >"$work/trainer.log" 2>&1
  local rc=$?
  cat "$work/trainer.log"
  ((rc == 0)) || fail "the trainer's equivalence check failed across the two hosts (exit $rc)"
  say "trainer equivalence: passed at 4 ranks on 2 hosts"
}

perf() {  # perf <label>: allreduce_perf over the link, its busbw reported
  run_mpi "$bin/allreduce_perf" -b 8 -e 8M -f 32 -n 3 -w 1 --compare mpi >"$work/perf.log" 2>&1
  local rc=$?
  cat "$work/perf.log"
  ((rc == 0)) || fail "allreduce_perf failed on the $1 link (exit $rc)"
  grep -q "Out of bounds values : 0 OK" "$work/perf.log" || fail "allreduce_perf found wrong values on the $1 link"
  say "allreduce_perf on the $1 link: $(grep -E '^# Avg' "$work/perf.log" | tr -s ' \n' ' ')"
}

# Impairs the link: a tbf rate cap on every host's end (the kernel here has no sch_netem, so no
# added delay).
impair_link() {
  sim_hosts_cap_rate 500mbit || { say "impaired link: SKIPPED"; return 1; }
  impairment="tbf rate 500mbit on every host's end"
}

run_impaired_link() {
  if [[ ! -x $bin/allreduce_perf ]]; then
    say "allreduce_perf: SKIPPED (not built)"
    return
  fi
  perf "plain"
  impairment=""
  if impair_link; then
    say "impaired link, both veth ends: $impairment"
    perf "impaired ($impairment)"
  fi
  if sim_hosts_pin; then
    check_pinned
    perf "hosts pinned${impairment:+, impaired}"
  else
    say "hosts pinned: SKIPPED"
  fi
}

# Every rank's allowed cores are its host's share (what sim_hosts_pin wrote for that host).
check_pinned() {
  local host cores expected
  run_mpi sh -c 'echo "$(hostname) $(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" /proc/self/status)"' \
    >"$work/pinned.txt" 2>&1 || { cat "$work/pinned.txt"; fail "could not start ranks on the pinned hosts"; }
  [[ $(grep -c '^host' "$work/pinned.txt") == 4 ]] || { cat "$work/pinned.txt"; fail "expected 4 ranks' cores"; }
  while read -r host cores; do
    [[ $host == host* ]] || continue
    expected=$(<"$SIM_WORK/cpus.$host")
    [[ $(sim_expand_cores "$cores") == "$(sim_expand_cores "$expected")" ]] ||
      fail "a rank on $host runs on cores $cores, not its host's $expected"
  done <"$work/pinned.txt"
  say "hosts pinned: $(sort "$work/pinned.txt" | grep '^host' | tr '\n' ';')"
}

# run_link_down <ranks per host> <elements> [mpirun arguments...]: hostB's link goes down in the middle of all-reduces.
# Every rank must raise TimeoutError within the timeout + 2 s naming the ranks it waited for
# (ranks fill each host's slots in turn: hostA holds 0..P-1). A rank that waited across the link
# names ranks of the other host; a rank that waited on a peer of its own host (one that was itself
# stuck across the link: the hierarchical algorithm's phases inside a node) may name that peer,
# if that peer names ranks of the other host: the blame must lead to the dead link in one step.
run_link_down() {
  local per_host=$1 elements=$2 timeout=5 dir=$work/link_down i r line seconds peer
  local np=$((2 * per_host))
  local -a named=()
  mkdir -p "$dir"
  sim_mpirun $np 90 -x RINGSYNC_TIMEOUT_SECONDS=$timeout "${@:3}" "$bin/test_netns_link_down" "$dir" "$elements" \
    >"$work/link_down.log" 2>&1 &
  local job=$!
  for ((i = 0; i < 300; ++i)); do [[ -e $dir/ready ]] && break; sleep 0.1; done
  [[ -e $dir/ready ]] || { cat "$work/link_down.log"; fail "the all-reduces did not start within 30 s"; }
  sim_hosts_link 1 down
  say "hostB's link is down"
  for ((i = 0; i < (timeout + 10) * 10; ++i)); do
    local all=1
    for ((r = 0; r < np; ++r)); do [[ -e $dir/rank$r.txt ]] || all=0; done
    ((all)) && break
    sleep 0.1
  done
  sim_hosts_link 1 up  # so that mpirun can reach hostB's daemon and end the job
  wait "$job"
  for ((r = 0; r < np; ++r)); do
    [[ -e $dir/rank$r.txt ]] || { cat "$work/link_down.log"; fail "rank $r reported nothing within $((timeout + 10)) s"; }
    line=$(cat "$dir/rank$r.txt")
    say "rank $r: $line"
    [[ $line == timeout* ]] || fail "rank $r did not raise TimeoutError"
    seconds=$(echo "$line" | awk '{print $2}')
    awk -v s="$seconds" -v t="$timeout" 'BEGIN { exit !(s <= t + 2) }' || fail "rank $r took $seconds s (timeout $timeout s)"
    named[r]=$(echo "$line" | sed -n 's/.*rank(s) \([0-9, ]*\).*/\1/p' | tr -d ' ' | tr ',' ' ')
    [[ -n ${named[r]} ]] || fail "rank $r's TimeoutError names no rank"
  done
  across() {  # across <rank> <peers...>: every peer is on the other host
    local me=$1 p
    shift
    for p in "$@"; do (((p / per_host) != (me / per_host))) || return 1; done
  }
  for ((r = 0; r < np; ++r)); do
    across $r ${named[r]} && continue
    for peer in ${named[r]}; do
      (((peer / per_host) != (r / per_host))) && continue
      across $peer ${named[peer]} ||
        fail "rank $r names rank $peer of its own host, which does not itself name the unreachable host"
    done
  done
  say "link down ($per_host rank(s) per host): every rank raised TimeoutError within the timeout + 2 s, naming the unreachable host's ranks (or a peer stuck on them)"
}

case $part in
  collectives | hierarchical | doubling | trainer | perf | all) sim_hosts_setup 2 2 ;;
  link_down | doubling_one_per_host) sim_hosts_setup 2 1 ;;
  link_down_hierarchical | link_down_rabenseifner) sim_hosts_setup 2 2 ;;
  scale_8x1) sim_hosts_setup 8 1 ;;
  scale_4x2) sim_hosts_setup 4 2 ;;
  scale_2221) sim_hosts_setup 4 2,2,2,1 ;;
  scale_3122) sim_hosts_setup 4 3,1,2,2 ;;
  scale_8x2) sim_hosts_setup 8 2 ;;
  *) echo "unknown part '$part'" >&2; exit 2 ;;
esac
[[ $part == collectives || $part == all ]] && run_collectives
[[ $part == hierarchical || $part == all ]] && run_hierarchical
[[ $part == doubling || $part == all ]] && run_doubling 4
[[ $part == doubling_one_per_host ]] && { run_doubling 2; run_ring 2; }
[[ $part == trainer || $part == all ]] && run_trainer
[[ $part == perf || $part == all ]] && run_impaired_link
[[ $part == link_down ]] && run_link_down 1 $((1 << 18))             # 1 MiB: the ring
[[ $part == link_down_hierarchical ]] && run_link_down 2 $((1 << 20))  # 4 MiB: the hierarchical all-reduce
[[ $part == link_down_rabenseifner ]] && run_link_down 2 $((1 << 20)) -x RINGSYNC_ALGO=rabenseifner  # node rounds + butterfly
run_scale() { run_algorithm_test "$1" test_netns_scale "every algorithm at $2" -x RINGSYNC_TEST_LAYOUT="${part#scale_}"; }
[[ $part == scale_8x1 ]] && run_scale 8 "8 hosts x 1"
[[ $part == scale_4x2 ]] && run_scale 8 "4 hosts x 2"
[[ $part == scale_2221 ]] && run_scale 7 "4 hosts of 2+2+2+1"
[[ $part == scale_3122 ]] && run_scale 8 "4 hosts of 3+1+2+2"
[[ $part == scale_8x2 ]] && ALGORITHM_TEST_LIMIT=420 run_scale 16 "8 hosts x 2"
say "$part: passed"
