# Sourced by the scripts: repository root, build folder, and Open MPI settings for this machine.
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
JOBS=${JOBS:-$(nproc)}
# Open MPI refuses root without these; 2 cores need oversubscription for 3-4 ranks; ob1 starts
# twice as fast as the default here. Open MPI 5 (the pip wheel scripts/gpu_bundle.sh carries to a
# GPU machine) launches through PRRTE, which reads oversubscription from PRTE_MCA_* instead.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_pml=ob1
export PRTE_MCA_rmaps_default_mapping_policy=:oversubscribe

# configure_and_build <build-dir> [cmake args...]
configure_and_build() {
  local dir=$1
  shift
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  cmake --build "$dir" -j "$JOBS"
}
