#!/usr/bin/env bash
# Across nodes on one machine: 4 ranks on two simulated hosts. Two network namespaces
# ("hostA", "hostB", each with its own hostname via a UTS namespace) are joined by a veth pair;
# mpirun runs on hostA and starts hostB's daemon through plm_rsh_agent = a script that enters
# hostB's namespace (what ssh would do on a cluster); MPI traffic is TCP over the veth.
#   1. all-reduce / broadcast / all-gather exact across the hosts (test_netns_collectives), and
#      bytes really crossed the veth;
#   2. the trainer's equivalence check (test_trainer_equivalence) at 4 ranks, when it is built;
#   3. tc netem delay + rate cap on the link: allreduce_perf still completes, busbw reported
#      (with the unimpaired link's figures from the same run for comparison), when it is built.
# Everything it creates is removed on exit, failure included. Exit 77 (CTest skip) when the
# environment refuses namespaces. Each part builds its own pair of hosts, so CTest runs the parts
# as separate entries, each well under a minute even when the 4 ranks share a few cores over TCP.
#   run_netns_test.sh <bin-dir> [collectives|trainer|perf|all]
set -uo pipefail

readonly kSkip=77
readonly subnet=10.213.7
bin=${1:?usage: run_netns_test.sh <bin-dir> [collectives|trainer|perf|all]}
part=${2:-all}
tag=$$
nsA=ringsync-$tag-a nsB=ringsync-$tag-b
vethA=rsv${tag}a vethB=rsv${tag}b  # interface names are at most 15 characters
work=$(mktemp -d /tmp/ringsync-netns-XXXXXX)

say() { echo "netns [${SECONDS}s]: $*"; }
skip() { say "SKIPPED: $*"; exit $kSkip; }
fail() { say "FAILED: $*"; exit 1; }

cleanup() {
  # Deleting a namespace deletes the veth end inside it, and with it the pair.
  ip netns del "$nsA" 2>/dev/null
  ip netns del "$nsB" 2>/dev/null
  rm -rf "/etc/netns/$nsA" "/etc/netns/$nsB" "$work"
}
child=0
# On a signal, stop the MPI job first (timeout(1) passes TERM on to mpirun), then clean up.
on_signal() {
  ((child)) && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
  exit 130
}
trap cleanup EXIT
trap on_signal INT TERM HUP

# Namespaces of an earlier run that was SIGKILLed (no trap runs then): its pid is in the name.
remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ringsync-[0-9]+-[ab]$'); do
    pid=${ns#ringsync-}
    pid=${pid%-*}
    if ! kill -0 "$pid" 2>/dev/null; then
      ip netns del "$ns" 2>/dev/null
      rm -rf "/etc/netns/$ns"
    fi
  done
}

setup_hosts() {
  for tool in ip tc unshare hostname mpirun orted; do
    command -v "$tool" >/dev/null || skip "$tool is not installed"
  done
  remove_stale
  ip netns add "$nsA" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err") (needs CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  ip netns add "$nsB" 2>"$work/err" || skip "cannot create a second network namespace: $(cat "$work/err")"
  ip netns exec "$nsA" unshare --uts true 2>"$work/err" || skip "cannot create a UTS namespace: $(cat "$work/err")"
  ip link add "$vethA" type veth peer name "$vethB" 2>"$work/err" || skip "cannot create a veth pair: $(cat "$work/err")"
  ip link set "$vethA" netns "$nsA" && ip link set "$vethB" netns "$nsB" || fail "cannot move the veth ends"
  local ns veth address
  for pair in "$nsA $vethA 1" "$nsB $vethB 2"; do
    read -r ns veth address <<<"$pair"
    ip -n "$ns" addr add "$subnet.$address/24" dev "$veth" && ip -n "$ns" link set "$veth" up &&
      ip -n "$ns" link set lo up || fail "cannot configure $veth in $ns"
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: the hosts' names.
    mkdir -p "/etc/netns/$ns" || skip "cannot write /etc/netns"
    printf '127.0.0.1 localhost\n%s.1 hostA\n%s.2 hostB\n' "$subnet" "$subnet" >"/etc/netns/$ns/hosts"
  done
  # plm_rsh_agent: "ssh hostB <command>" becomes "enter hostB's namespaces, run <command>".
  cat >"$work/agent.sh" <<AGENT
#!/bin/sh
host=\$1; shift
case \$host in
  hostA) ns=$nsA ;;
  hostB) ns=$nsB ;;
  *) echo "netns agent: unknown host \$host" >&2; exit 1 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$host && \$*"
AGENT
  chmod +x "$work/agent.sh"
  printf 'hostA slots=2\nhostB slots=2\n' >"$work/hostfile"
  say "hosts: hostA=$subnet.1 in $nsA, hostB=$subnet.2 in $nsB, veth $vethA <-> $vethB"
}

# mpirun on hostA: 2 ranks per host (ranks 0,1 on hostA, 2,3 on hostB), TCP over the veth only.
# In the background and waited for, so that a signal reaches on_signal at once.
run_mpi() {
  ip netns exec "$nsA" unshare --uts sh -c 'hostname hostA && exec "$@"' sh \
    timeout -k 5 120 mpirun -np 4 --hostfile "$work/hostfile" --mca plm_rsh_agent "$work/agent.sh" \
    --mca btl self,vader,tcp --mca btl_tcp_if_include "$subnet.0/24" --mca oob_tcp_if_include "$subnet.0/24" \
    -x RINGSYNC_TIMEOUT_SECONDS=60 "$@" &
  child=$!
  wait "$child"
  local rc=$?
  child=0
  return $rc
}

veth_bytes() {  # bytes through hostA's end of the veth, both directions
  local stats=/sys/class/net/$vethA/statistics rx tx
  rx=$(ip netns exec "$nsA" cat "$stats/rx_bytes") && tx=$(ip netns exec "$nsA" cat "$stats/tx_bytes") || return 1
  echo $((rx + tx))
}

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

# Impairs both veth ends: netem delay + rate cap where the kernel has netem, else (some VM kernels
# lack sch_netem) a tbf rate cap alone, saying so.
impair_link() {
  local netem="netem delay 2ms rate 500mbit" tbf="tbf rate 500mbit burst 256kb latency 100ms"
  if ip netns exec "$nsA" tc qdisc add dev "$vethA" root $netem 2>"$work/err" &&
     ip netns exec "$nsB" tc qdisc add dev "$vethB" root $netem 2>>"$work/err"; then
    impairment=$netem
    return 0
  fi
  say "netem refused ($(head -1 "$work/err")): delay not applied, rate cap with tbf instead"
  ip netns exec "$nsA" tc qdisc del dev "$vethA" root 2>/dev/null
  if ip netns exec "$nsA" tc qdisc add dev "$vethA" root $tbf 2>"$work/err" &&
     ip netns exec "$nsB" tc qdisc add dev "$vethB" root $tbf 2>>"$work/err"; then
    impairment=$tbf
    return 0
  fi
  say "impaired link: SKIPPED (tc refused tbf too: $(head -1 "$work/err"))"
  return 1
}

run_impaired_link() {
  if [[ ! -x $bin/allreduce_perf ]]; then
    say "allreduce_perf: SKIPPED (not built)"
    return
  fi
  perf "plain"
  impairment=""
  impair_link || return
  say "impaired link, both veth ends: $impairment"
  perf "impaired ($impairment)"
}

case $part in
  collectives | trainer | perf | all) ;;
  *) echo "unknown part '$part'" >&2; exit 2 ;;
esac
setup_hosts
[[ $part == collectives || $part == all ]] && run_collectives
[[ $part == trainer || $part == all ]] && run_trainer
[[ $part == perf || $part == all ]] && run_impaired_link
say "$part: passed"
