#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs every test (CTest: unit, core, large,
# faults, fusion, trainer, bench, gpu-skips, install, python, torch).
#   scripts/test.sh              Release build in build/, the whole suite (torch tests SKIPPED
#                                when torch is not installed)
#   scripts/test.sh --with-torch also installs torch (setup.sh --with-torch, ~3 GB) and runs the
#                                torch tests for real: a torch that does not import fails them
#   scripts/test.sh --sanitize   ASan+UBSan build in build-asan/, the whole suite but `large`
#   scripts/test.sh --tsan       TSan build in build-tsan/, the tests that use threads
#   extra arguments after `--` go to ctest (e.g. -- -L core)
set -euo pipefail
source "$(dirname "$0")/common.sh"

mode=release
setup_args=()
ctest_args=()
while (($#)); do
  case $1 in
    --sanitize) mode=asan ;;
    --tsan) mode=tsan ;;
    --with-torch) setup_args+=(--with-torch); export RINGSYNC_REQUIRE_TORCH=1 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "usage: $0 [--sanitize|--tsan] [--with-torch] [-- ctest args]" >&2; exit 2 ;;
  esac
  shift
done

"$ROOT/scripts/check_format.sh"
"$ROOT/scripts/check_references.sh"
"$ROOT/scripts/setup.sh" "${setup_args[@]}"
if [[ $mode == release ]] && ! "${PYTHON:-python3}" -c "import torch" >/dev/null 2>&1; then
  echo "test.sh: torch is not installed: the torch tests will be SKIPPED (scripts/test.sh --with-torch runs them)"
fi
start=$(date +%s)
case $mode in
  release)
    configure_and_build "$ROOT/build"
    cd "$ROOT/build"
    ctest --output-on-failure -j1 "${ctest_args[@]}"
    ;;
  asan)
    # CUDA is left out: ASan and the CUDA runtime's address-space reservations do not mix.
    configure_and_build "$ROOT/build-asan" -DRINGSYNC_SANITIZE=ON -DRINGSYNC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cd "$ROOT/build-asan"
    # Open MPI's own allocations are not ours to fix: leak checking off, everything else on. The
    # install test builds an uninstrumented consumer against the instrumented library: left out.
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      ctest --output-on-failure -j1 -LE "large|python|torch|bench|install" "${ctest_args[@]}"
    ;;
  tsan)
    configure_and_build "$ROOT/build-tsan" -DRINGSYNC_TSAN=ON -DRINGSYNC_ENABLE_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
    cd "$ROOT/build-tsan"
    TSAN_OPTIONS="halt_on_error=1 suppressions=$ROOT/tests/tsan.supp" \
      ctest --output-on-failure -j1 -L threads "${ctest_args[@]}"
    ;;
esac
echo "test.sh ($mode): all tests passed in $(( $(date +%s) - start )) s"
