#!/usr/bin/env bash
# Installs ringsync (with ringsync::torch) into a temporary prefix, builds the out-of-tree libtorch
# consumer with find_package(ringsync REQUIRED COMPONENTS torch) and runs it under mpirun -np 2.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/ringsync/torch.h"
test -f "$work/prefix/include/ringsync/torch_c10d.h"
# libtorch is found through the hint the installed package keeps (the libtorch it was built with).
cmake -S "$source_dir/install_consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" \
      -DCMAKE_BUILD_TYPE=Release -DTORCH_CUDA_ARCH_LIST=9.0 >"$work/configure.log" 2>&1 || {
  cat "$work/configure.log"
  exit 1
}
cmake --build "$work/consumer" >/dev/null
mpirun -np 2 "$work/consumer/torch_consumer"
echo "install test: find_package(ringsync REQUIRED COMPONENTS torch) consumer ran"
