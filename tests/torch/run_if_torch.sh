#!/usr/bin/env bash
# run_if_torch.sh PYTHON COMMAND...: runs COMMAND (an mpirun line) when PYTHON can import torch.
# Without torch it prints why and exits 77, which CTest reports as skipped; with
# RINGSYNC_REQUIRE_TORCH=1 (scripts/test.sh --with-torch, CI) a missing torch is a failure instead.
set -euo pipefail
python=$1
shift
if ! "$python" -c "import torch" >/dev/null 2>&1; then
  if [[ ${RINGSYNC_REQUIRE_TORCH:-0} == 1 ]]; then
    echo "FAILED: torch does not import in $python, and RINGSYNC_REQUIRE_TORCH=1 (scripts/setup.sh --with-torch installs it)"
    exit 1
  fi
  echo "SKIPPED: torch is not installed for $python (scripts/setup.sh --with-torch installs it; scripts/test.sh --with-torch runs these tests)"
  exit 77
fi
exec "$@"
