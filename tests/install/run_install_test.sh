#!/usr/bin/env bash
# Install ringsync into a temporary prefix, build the out-of-tree consumers (the README's two C++
# examples: replicated and sharded) against it with find_package(ringsync) and, separately, with
# pkg-config; run them under mpirun -np 2 (the sharded one at 3 ranks too).
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
mpirun -np 2 "$work/consumer/consumer"
mpirun -np 2 "$work/consumer/consumer_sharded"
mpirun -np 3 "$work/consumer/consumer_sharded"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
libdir=$(pkg-config --variable=libdir ringsync)
# shellcheck disable=SC2046
g++ -std=c++17 "$source_dir/consumer/main.cc" -o "$work/consumer_pc" $(pkg-config --cflags --libs ringsync) -Wl,-rpath,"$libdir"
mpirun -np 2 "$work/consumer_pc"
# shellcheck disable=SC2046
g++ -std=c++17 "$source_dir/consumer/sharded.cc" -o "$work/consumer_sharded_pc" $(pkg-config --cflags --libs ringsync) -Wl,-rpath,"$libdir"
mpirun -np 2 "$work/consumer_sharded_pc"
echo "install test: find_package and pkg-config consumers (replicated and sharded) all ran"
