#!/usr/bin/env bash
# Install ringsync into a temporary prefix, build the out-of-tree consumer against it with
# find_package(ringsync) and, separately, with pkg-config; run both under mpirun -np 2.
set -euo pipefail
build_dir=$1
source_dir=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
mpirun -np 2 "$work/consumer/consumer"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:${PKG_CONFIG_PATH:-}"
libdir=$(pkg-config --variable=libdir ringsync)
# shellcheck disable=SC2046
g++ -std=c++17 "$source_dir/consumer/main.cc" -o "$work/consumer_pc" $(pkg-config --cflags --libs ringsync) -Wl,-rpath,"$libdir"
mpirun -np 2 "$work/consumer_pc"
echo "install test: find_package and pkg-config consumers both ran"
