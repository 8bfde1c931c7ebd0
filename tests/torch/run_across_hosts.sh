#!/usr/bin/env bash
# run_across_hosts.sh PYTHON SCRIPT [args...]: runs SCRIPT at 2 ranks on two simulated hosts
# (tests/netns/simulated_hosts.sh: network namespaces joined by a veth pair, each with its own
# hostname and address, MPI over TCP between them), so that what a rank reaches must be reachable
# from the other host (ringsync.torch's store: not 127.0.0.1). Exits 77 (skipped) where this
# machine refuses namespaces, or without torch (run_if_torch.sh).
set -uo pipefail
python=${1:?usage: run_across_hosts.sh PYTHON SCRIPT [args...]}
shift
SIM_PREFIX=torch_across_hosts
source "$(dirname "${BASH_SOURCE[0]}")/../netns/simulated_hosts.sh"
sim_hosts_setup 2 1
# The variables the ranks need travel with -x (mpirun starts hostB's rank through the agent).
sim_mpirun 2 150 -x PYTHONPATH -x PYTHONDONTWRITEBYTECODE -x RINGSYNC_TIMEOUT_SECONDS -x OMPI_MCA_pml \
  "$python" "$@"
