#!/usr/bin/env bash
# run_if_data.sh DIR COMMAND...: runs COMMAND when DIR holds Fashion-MNIST's training files;
# otherwise prints SKIPPED with the reason and exits 77 (CTest: skipped).
set -euo pipefail
dir=$1
shift
if [[ ! -r $dir/train-images-idx3-ubyte.gz || ! -r $dir/train-labels-idx1-ubyte.gz ]]; then
  echo "SKIPPED: Fashion-MNIST is not in $dir (Debian's dataset-fashion-mnist; scripts/setup.sh installs it)"
  exit 77
fi
exec "$@"
