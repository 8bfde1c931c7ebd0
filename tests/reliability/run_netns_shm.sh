#!/usr/bin/env bash
# Two simulated hosts x 2 ranks (tests/netns/simulated_hosts.sh) where hostB's /dev/shm is a fresh
# tmpfs mounted read-only ("ro": ringsync cannot create a segment there) or of 1 MB ("small":
# shared-memory rounds with smaller slots), in hostB's own mount namespace; then
# test_netns_shm_agreement. Open MPI's own shared-memory files go to /tmp on both hosts, so only
# ringsync meets the small /dev/shm. Exit 77 (CTest's skip) where namespaces are refused.
#   run_netns_shm.sh <bin-dir> ro|small
set -uo pipefail
bin=${1:?usage: run_netns_shm.sh <bin-dir> ro|small}
mode=${2:?usage: run_netns_shm.sh <bin-dir> ro|small}
SIM_PREFIX="netns shm ($mode)"
source "$(dirname "${BASH_SOURCE[0]}")/../netns/simulated_hosts.sh"

case $mode in
  ro) options="ro,size=1m" ;;
  small) options="size=1m" ;;
  *) sim_fail "unknown mode '$mode'" ;;
esac
sim_hosts_setup 2 2
unshare --mount sh -c "mount -t tmpfs -o $options tmpfs /dev/shm" 2>"$SIM_WORK/err" ||
  sim_skip "cannot mount a tmpfs on /dev/shm in a mount namespace: $(head -1 "$SIM_WORK/err")"
# hostB's daemon (and every rank it starts) sees its own /dev/shm: the agent mounts it first, in
# the mount namespace `ip netns exec` gives every command it runs.
mv "$SIM_WORK/agent.sh" "$SIM_WORK/agent_hosts.sh"
cat >"$SIM_WORK/agent.sh" <<AGENT
#!/bin/sh
host=\$1; shift
if [ "\$host" = hostB ]; then
  exec "$SIM_WORK/agent_hosts.sh" "\$host" "mount -t tmpfs -o $options tmpfs /dev/shm && \$*"
fi
exec "$SIM_WORK/agent_hosts.sh" "\$host" "\$@"
AGENT
chmod +x "$SIM_WORK/agent.sh"
sim_mpirun 4 150 -x RINGSYNC_TIMEOUT_SECONDS=20 --mca btl_vader_backing_directory /tmp \
  sh -c 'echo "$(hostname) rank $OMPI_COMM_WORLD_RANK: $(df -h /dev/shm | tail -1) $(grep " /dev/shm " /proc/mounts)"' \
  >"$SIM_WORK/mounts.log" 2>&1 || { cat "$SIM_WORK/mounts.log"; sim_fail "could not start the ranks"; }
sort "$SIM_WORK/mounts.log"
grep -q "^hostB.*1.0M" "$SIM_WORK/mounts.log" || sim_fail "hostB's ranks do not see the 1 MB /dev/shm"
! grep -q "^hostA.*1.0M" "$SIM_WORK/mounts.log" || sim_fail "hostA's ranks see hostB's /dev/shm"
sim_mpirun 4 150 -x RINGSYNC_TIMEOUT_SECONDS=20 -x RINGSYNC_LOG=info --mca btl_vader_backing_directory /tmp \
  "$bin/test_netns_shm_agreement" >"$SIM_WORK/test.log" 2>&1
rc=$?
grep -v '\] info: \|\] report: \|^  rank ' "$SIM_WORK/test.log" | tail -n 40
grep '\] info: .*/dev/shm' "$SIM_WORK/test.log"
sim_say "algorithms taken (calls on all ranks): $(grep -o '\] info: [a-z]* .*algorithm [a-z_]*' "$SIM_WORK/test.log" |
  sed 's/.*info: \([a-z]*\) .*algorithm \([a-z_]*\)/\1 \2/' | sort | uniq -c | tr -s ' \n' ' ')"
((rc == 0)) || sim_fail "the ranks did not agree with hostB's /dev/shm $mode (exit $rc)"
grep -q '/dev/shm' "$SIM_WORK/test.log" || sim_fail "RINGSYNC_LOG=info never named /dev/shm"
sim_say "passed: every rank chose alike with hostB's /dev/shm $mode"
