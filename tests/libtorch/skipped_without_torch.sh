#!/usr/bin/env bash
# The libtorch tests when ringsync::torch was not built: SKIPPED (exit 77) with the reason, or a
# failure where torch is required (RINGSYNC_REQUIRE_TORCH=1: scripts/test.sh --with-torch, CI).
setting=$1
reason="ringsync::torch was not built (RINGSYNC_WITH_TORCH=$setting; AUTO builds it when libtorch is found, see the configure log)"
if [[ ${RINGSYNC_REQUIRE_TORCH:-0} == 1 ]]; then
  echo "FAILED: $reason, and RINGSYNC_REQUIRE_TORCH=1"
  exit 1
fi
echo "SKIPPED: $reason"
exit 77
