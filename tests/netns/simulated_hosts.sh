# shellcheck shell=bash
# Simulated hosts on one machine, sourced by tests/netns/run_netns_test.sh and bench/multihost.sh.
#
# H network namespaces, each with its own hostname (a UTS namespace entered per command), so that
# Open MPI sees H nodes: two hosts are joined by one veth pair; more by a bridge in a namespace of
# its own (the "switch"), one veth pair per host. mpirun runs on the first host and starts the
# others' daemons through plm_rsh_agent = a script that enters that host's namespaces (what ssh
# would do on a cluster); MPI traffic is TCP over the veths. An optional tbf rate cap on every
# host's end caps what each host sends (the kernel here has tbf but no sch_netem: no added delay).
#
#   sim_hosts_setup <hosts> <slots-per-host>   creates everything (sim_skip where it is refused);
#                                              slots "2,2,2,1": per host, in host order (uneven nodes)
#   sim_hosts_cap_rate <rate>                  e.g. 2gbit; returns 1 (and says why) when refused
#   sim_hosts_pin                              gives every host cores of its own (see below)
#   sim_mpirun <np> <timeout-s> <mpirun args...>  on the first host, TCP over the veths only
#   sim_hosts_link <host-index> up|down        a host's link, for fault tests
#   sim_hosts_veth_bytes                       bytes through the first host's veth, both ways
# Everything is removed on exit (trap), failure included; namespaces of an earlier run that was
# SIGKILLed are removed at the next setup. The caller defines nothing; it may set SIM_PREFIX (the
# log prefix) before sourcing. sim_skip exits 77 (CTest's skip code).

readonly SIM_SKIP=77
readonly SIM_SUBNET=10.213.7
SIM_PREFIX=${SIM_PREFIX:-netns}
sim_tag=$$
sim_ns=() sim_veth=() sim_names=()
sim_switch=""
sim_child=0
SIM_WORK=$(mktemp -d /tmp/ringsync-netns-XXXXXX)

sim_say() { echo "$SIM_PREFIX [${SECONDS}s]: $*"; }
sim_skip() { sim_say "SKIPPED: $*"; exit $SIM_SKIP; }
sim_fail() { sim_say "FAILED: $*"; exit 1; }

sim_cleanup() {
  # Deleting a namespace deletes the veth ends inside it, and with them the pairs.
  local ns
  for ns in "${sim_ns[@]}" $sim_switch; do
    ip netns del "$ns" 2>/dev/null
    rm -rf "/etc/netns/$ns"
  done
  rm -rf "$SIM_WORK"
}
# On a signal, stop the MPI job first (timeout(1) passes TERM on to mpirun), then clean up.
sim_on_signal() {
  ((sim_child)) && kill -TERM "$sim_child" 2>/dev/null && wait "$sim_child" 2>/dev/null
  exit 130
}
trap sim_cleanup EXIT
trap sim_on_signal INT TERM HUP

# Namespaces of an earlier run that was SIGKILLed (no trap runs then): its pid is in the name.
sim_remove_stale() {
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^ringsync-[0-9]+-[a-z]+$'); do
    pid=${ns#ringsync-}
    pid=${pid%-*}
    if ! kill -0 "$pid" 2>/dev/null; then
      ip netns del "$ns" 2>/dev/null
      rm -rf "/etc/netns/$ns"
    fi
  done
}

sim_host_name() {  # 0 -> hostA, 1 -> hostB, ...
  local letters=ABCDEFGHIJKLMNOPQRSTUVWXYZ
  echo "host${letters:$1:1}"
}

# Joins host i's namespace to the others: the end inside the host is sim_veth[i].
sim_link_host() {
  local i=$1 host=rsv${sim_tag}h$1 sw=rsv${sim_tag}s$1  # interface names are at most 15 characters
  ip link add "$host" type veth peer name "$sw" 2>"$SIM_WORK/err" || sim_skip "cannot create a veth pair: $(cat "$SIM_WORK/err")"
  ip link set "$host" netns "${sim_ns[i]}" && ip link set "$sw" netns "$sim_switch" &&
    ip -n "$sim_switch" link set "$sw" master br0 && ip -n "$sim_switch" link set "$sw" up ||
    sim_fail "cannot attach $host to the switch"
  sim_veth[i]=$host
}

sim_hosts_setup() {
  local hosts=${1:?hosts} slots=${2:?slots} i tool
  local -a slotsOf
  ((hosts >= 2 && hosts <= 26)) || sim_fail "between 2 and 26 hosts, not $hosts"
  IFS=, read -ra slotsOf <<<"$slots"
  ((${#slotsOf[@]} == 1 || ${#slotsOf[@]} == hosts)) || sim_fail "slots '$slots': one number, or one per host"
  for ((i = ${#slotsOf[@]}; i < hosts; ++i)); do slotsOf[i]=${slotsOf[0]}; done
  for tool in ip tc unshare hostname mpirun orted; do
    command -v "$tool" >/dev/null || sim_skip "$tool is not installed"
  done
  sim_remove_stale
  for ((i = 0; i < hosts; ++i)); do
    sim_names[i]=$(sim_host_name "$i")
    sim_ns[i]=ringsync-$sim_tag-$(echo "${sim_names[i]#host}" | tr A-Z a-z)
    ip netns add "${sim_ns[i]}" 2>"$SIM_WORK/err" ||
      sim_skip "cannot create a network namespace: $(cat "$SIM_WORK/err") (needs CAP_SYS_ADMIN and CAP_NET_ADMIN)"
  done
  ip netns exec "${sim_ns[0]}" unshare --uts true 2>"$SIM_WORK/err" || sim_skip "cannot create a UTS namespace: $(cat "$SIM_WORK/err")"
  if ((hosts == 2)); then
    sim_veth=("rsv${sim_tag}a" "rsv${sim_tag}b")
    ip link add "${sim_veth[0]}" type veth peer name "${sim_veth[1]}" 2>"$SIM_WORK/err" ||
      sim_skip "cannot create a veth pair: $(cat "$SIM_WORK/err")"
    ip link set "${sim_veth[0]}" netns "${sim_ns[0]}" && ip link set "${sim_veth[1]}" netns "${sim_ns[1]}" ||
      sim_fail "cannot move the veth ends"
  else
    sim_switch=ringsync-$sim_tag-switch
    ip netns add "$sim_switch" && ip -n "$sim_switch" link add br0 type bridge 2>"$SIM_WORK/err" &&
      ip -n "$sim_switch" link set br0 up || sim_skip "cannot create a bridge: $(cat "$SIM_WORK/err")"
    for ((i = 0; i < hosts; ++i)); do sim_link_host "$i"; done
  fi
  local hostsFile="127.0.0.1 localhost"$'\n'
  for ((i = 0; i < hosts; ++i)); do hostsFile+="$SIM_SUBNET.$((i + 1)) ${sim_names[i]}"$'\n'; done
  for ((i = 0; i < hosts; ++i)); do
    ip -n "${sim_ns[i]}" addr add "$SIM_SUBNET.$((i + 1))/24" dev "${sim_veth[i]}" &&
      ip -n "${sim_ns[i]}" link set "${sim_veth[i]}" up && ip -n "${sim_ns[i]}" link set lo up ||
      sim_fail "cannot configure ${sim_veth[i]} in ${sim_ns[i]}"
    # `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts: the hosts' names.
    mkdir -p "/etc/netns/${sim_ns[i]}" || sim_skip "cannot write /etc/netns"
    printf '%s' "$hostsFile" >"/etc/netns/${sim_ns[i]}/hosts"
  done
  # plm_rsh_agent: "ssh hostB <command>" becomes "enter hostB's namespaces, run <command>".
  {
    echo '#!/bin/sh'
    echo 'host=$1; shift'
    echo 'case $host in'
    for ((i = 0; i < hosts; ++i)); do echo "  ${sim_names[i]}) ns=${sim_ns[i]} ;;"; done
    echo '  *) echo "netns agent: unknown host $host" >&2; exit 1 ;;'
    echo 'esac'
    echo "cpus=\$(cat \"$SIM_WORK/cpus.\$host\" 2>/dev/null)"
    echo 'exec ip netns exec "$ns" unshare --uts ${cpus:+taskset -c $cpus} sh -c "hostname $host && $*"'
  } >"$SIM_WORK/agent.sh"
  chmod +x "$SIM_WORK/agent.sh"
  : >"$SIM_WORK/hostfile"
  for ((i = 0; i < hosts; ++i)); do echo "${sim_names[i]} slots=${slotsOf[i]}" >>"$SIM_WORK/hostfile"; done
  local layout=""
  for ((i = 0; i < hosts; ++i)); do layout+=" ${sim_names[i]}=$SIM_SUBNET.$((i + 1))"; done
  sim_say "$hosts hosts x $slots slots:$layout ($([[ -n $sim_switch ]] && echo "bridge in $sim_switch" || echo "one veth pair"))"
}

# Caps what every host sends at <rate> (tc's units: 2gbit, 500mbit). The burst lets a full TCP
# window through at line rate; the latency bounds the queue (tbf drops beyond it).
sim_hosts_cap_rate() {
  local rate=$1 i
  for i in "${!sim_ns[@]}"; do
    ip netns exec "${sim_ns[i]}" tc qdisc replace dev "${sim_veth[i]}" root tbf rate "$rate" burst 512kb latency 50ms \
      2>"$SIM_WORK/err" || { sim_say "tc refused a tbf rate cap: $(head -1 "$SIM_WORK/err")"; return 1; }
  done
}

# The benches' set-up (bench/multihost*.sh, trainer_pairs.sh): <hosts> x <ranks>, each host on
# cores of its own when <pin> is 1, the link capped when a <rate> is given; skips (77) where this
# machine refuses either. SIM_TCP_AUTOCORK=0 in the environment turns the kernel's TCP autocorking
# off in every host (net.ipv4.tcp_autocorking, per namespace; the kernel's default is on): with a
# rate cap, packets wait in tbf, autocorking then holds a connection's next write until they leave,
# and where both ends of one connection send at once (recursive doubling, Rabenseifner) a corked
# tail can wait for the peer's 40 ms delayed ACK (RESULTS section 16.17).
sim_bench_hosts() {
  local hosts=$1 ranks=$2 pin=$3 rate=${4:-} ns
  sim_hosts_setup "$hosts" "$ranks"
  ((pin)) && { sim_hosts_pin || sim_skip "cannot pin the simulated hosts"; }
  [[ -z $rate ]] || sim_hosts_cap_rate "$rate" || sim_skip "cannot cap the link rate at $rate"
  if [[ ${SIM_TCP_AUTOCORK:-1} == 0 ]]; then
    for ns in "${sim_ns[@]}"; do
      ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_autocorking=0 || sim_skip "cannot turn TCP autocorking off"
    done
    sim_say "TCP autocorking off in every host (SIM_TCP_AUTOCORK=0)"
  fi
}

# Without it, every host's ranks may run on every core of this machine, which no two real hosts
# do: a rank of hostA and one of hostB take turns on one core, and a rank waits for a peer that
# the scheduler has put behind a rank of the other host. Pinned, host i's daemon (and with it
# every rank it starts) runs on its own share of the cores (taskset), as if each host had
# nproc/H cores; with more hosts than cores, hosts share cores round-robin. Call it after
# sim_hosts_setup; it prints which host has which cores. Returns 1 (and says why) without taskset.
sim_hosts_pin() {
  local hosts=${#sim_ns[@]} i first last list="" cores mine
  command -v taskset >/dev/null || { sim_say "cannot pin the hosts: taskset (util-linux) is not installed"; return 1; }
  # The cores this process may use, not 0..nproc-1: a container's cpuset may start elsewhere.
  read -ra cores <<<"$(sim_expand_cores "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)")"
  for ((i = 0; i < hosts; ++i)); do
    if ((hosts <= ${#cores[@]})); then
      first=$((i * ${#cores[@]} / hosts)) last=$(((i + 1) * ${#cores[@]} / hosts - 1))
    else
      first=$((i % ${#cores[@]})) last=$first
    fi
    mine=$(IFS=,; echo "${cores[*]:first:last - first + 1}")
    echo "$mine" >"$SIM_WORK/cpus.${sim_names[i]}"
    list+=" ${sim_names[i]}=cores $mine"
  done
  sim_say "hosts pinned:$list"
}

# "0-2,5" -> "0 1 2 5": a kernel cpu list (Cpus_allowed_list, taskset -c) as single cores.
sim_expand_cores() {
  local part parts out=()
  IFS=, read -ra parts <<<"$1"
  for part in "${parts[@]}"; do
    if [[ $part == *-* ]]; then
      out+=($(seq "${part%-*}" "${part#*-}"))
    else
      out+=("$part")
    fi
  done
  echo "${out[*]}"
}

sim_hosts_link() {
  ip -n "${sim_ns[$1]}" link set "${sim_veth[$1]}" "$2"
}

sim_hosts_veth_bytes() {
  local stats=/sys/class/net/${sim_veth[0]}/statistics rx tx
  rx=$(ip netns exec "${sim_ns[0]}" cat "$stats/rx_bytes") && tx=$(ip netns exec "${sim_ns[0]}" cat "$stats/tx_bytes") || return 1
  echo $((rx + tx))
}

# mpirun on the first host, ranks filling each host's slots in turn, TCP over the veths only.
# --map-by slot is explicit: under Open MPI 5 the mapping policy scripts/common.sh sets for
# PRRTE (":oversubscribe", no placement of its own) put every rank on the first host.
# --bind-to none: the simulated hosts share this machine's cores (unless sim_hosts_pin gave each
# its own), and each host's daemon binds its own local rank 0 to core 0, so with one rank per host every rank ran on core 0 (the trainer
# across 2 hosts x 1 ran at 0.5x of one host even with 13% of its step in communication).
# In the background and waited for, so that a signal reaches sim_on_signal at once.
sim_mpirun() {
  local np=$1 limit=$2 cpus
  shift 2
  cpus=$(cat "$SIM_WORK/cpus.${sim_names[0]}" 2>/dev/null)
  ip netns exec "${sim_ns[0]}" unshare --uts ${cpus:+taskset -c $cpus} sh -c "hostname ${sim_names[0]} && exec \"\$@\"" sh \
    timeout -k 5 "$limit" mpirun -np "$np" --hostfile "$SIM_WORK/hostfile" --mca plm_rsh_agent "$SIM_WORK/agent.sh" \
    --map-by slot --bind-to none --mca btl self,vader,tcp --mca btl_tcp_if_include "$SIM_SUBNET.0/24" --mca oob_tcp_if_include "$SIM_SUBNET.0/24" \
    "$@" &
  sim_child=$!
  wait "$sim_child"
  local rc=$?
  sim_child=0
  return $rc
}
