#!/usr/bin/env bash
# Installs what ringsync needs on a fresh Debian 12 machine (idempotent, quick when done):
# Open MPI, Catch2 v2, OpenBLAS, CLI11, zlib, Fashion-MNIST, clang-format from Debian; nanobind,
# scikit-build-core, numpy, pytest, matplotlib, ml_dtypes (bfloat16 arrays) and mpi4py (optional
# communicator interop, tested) from PyPI. CUDA is optional and never installed here.
#   scripts/setup.sh               the above
#   scripts/setup.sh --with-torch  also torch from PyPI for ringsync.torch (the CUDA build: ~3 GB
#                                  downloaded, ~5.4 GB installed; there is no CPU-only torch on
#                                  PyPI, and --no-deps leaves `import torch` broken)
set -euo pipefail

with_torch=0
while (($#)); do
  case $1 in
    --with-torch) with_torch=1 ;;
    *) echo "usage: $0 [--with-torch]" >&2; exit 2 ;;
  esac
  shift
done

APT_PACKAGES=(build-essential cmake pkg-config openmpi-bin libopenmpi-dev catch2 libopenblas-dev
              libcli11-dev nlohmann-json3-dev zlib1g-dev dataset-fashion-mnist iproute2 clang-format)
PIP_PACKAGES=(nanobind scikit-build-core numpy pytest matplotlib ml_dtypes mpi4py)
((with_torch)) && PIP_PACKAGES+=(torch)

missing=()
for package in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
pip_missing=()
for package in "${PIP_PACKAGES[@]}"; do
  module=${package//-/_}
  "$PYTHON" -c "import ${module}" 2>/dev/null || pip_missing+=("$package")
done
if ((${#pip_missing[@]})); then
  echo "setup: pip installing ${pip_missing[*]}"
  "$PYTHON" -m pip install -q --root-user-action=ignore "${pip_missing[@]}"
fi
