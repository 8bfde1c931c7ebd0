#!/usr/bin/env bash
# Fails when a tracked C/C++/CUDA file differs from what clang-format makes of it with the
# repository's .clang-format (120 columns). scripts/test.sh runs it first; to fix what it finds:
#   git ls-files '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp' | xargs clang-format -i
# Installs clang-format from Debian when it is missing (as setup.sh does). Debian 12's is version
# 14; another major version may format some lines differently, so the version that ran is printed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

find_clang_format() {
  command -v clang-format-14 || command -v clang-format || true
}
tool=$(find_clang_format)
if [[ -z $tool ]]; then
  echo "check_format: clang-format is missing, installing it (apt-get install clang-format)"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  if ! { $SUDO apt-get update -qq &&
         DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-format >/dev/null; }; then
    echo "check_format: FAILED: clang-format is not installed and apt-get could not install it" >&2
    exit 1
  fi
  tool=$(find_clang_format)
  [[ -n $tool ]] || { echo "check_format: FAILED: clang-format still not found after installing it" >&2; exit 1; }
fi

mapfile -t files < <(git ls-files '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp')
report=$(mktemp)
trap 'rm -f "$report"' EXIT
if ! "$tool" --dry-run --Werror "${files[@]}" 2>"$report"; then
  {
    echo "check_format: FAILED: $(grep -E '^[^ ].*: error:' "$report" | cut -d: -f1 | sort -u | wc -l) of" \
      "${#files[@]} files differ from .clang-format ($("$tool" --version)); the first differences:"
    head -12 "$report"
    echo "check_format: to fix: git ls-files '*.h' '*.cc' '*.cu' '*.cuh' '*.cpp' | xargs $tool -i"
  } >&2
  exit 1
fi
echo "check_format: ${#files[@]} files match .clang-format ($("$tool" --version | sed 's/.*version //'))"
