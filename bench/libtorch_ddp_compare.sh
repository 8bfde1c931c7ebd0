#!/usr/bin/env bash
# The libtorch example trainer's step time with its gradients averaged three ways, in 5 launches:
# ringsync::torch::DistributedDataParallel (--overlap auto|on|off: the trainer's option), per-parameter
# Communicator::allreduce (ringsync::torch::allreduce, kAvg) and per-parameter MPI_Allreduce + divide
# (pytorch/examples' dist-mnist), interleaved in rounds inside each launch (paired in one process),
# then per mode the median over the launches' medians and their spread, and DDP's share of
# communication hidden behind backward (1 - time synchronize() waited / time the buckets' all-reduces took).
#
#   bench/libtorch_ddp_compare.sh [--build DIR] [--np N] [--launches N] [-- trainer options]
# e.g. bench/libtorch_ddp_compare.sh --np 2 -- --hidden 512,256 --rounds 5 --steps-per-round 10
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/../scripts/common.sh"
build=$ROOT/build np=2 launches=5
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --np) np=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "libtorch_ddp_compare.sh: unknown option '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
trainer=$build/bin/libtorch_ddp_trainer
[[ -x $trainer ]] || { echo "libtorch_ddp_compare.sh: $trainer not built (needs libtorch: RINGSYNC_WITH_TORCH)" >&2; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((launch = 1; launch <= launches; ++launch)); do
  echo "# launch $launch: mpirun -np $np $trainer --compare $*"
  mpirun -np "$np" "$trainer" --compare "$@" | tee -a "$out"
done
# Rows "mode median_ms min..max hidden" of every launch: per mode, the median of the launches'
# medians and their range.
awk -v launches="$launches" '
  /^#/ { next }
  { n[$1]++; v[$1, n[$1]] = $2; if ($4 != "-") h[$1] = h[$1] " " $4; order[$1] = order[$1] ? order[$1] : ++modes; name[order[$1]] = $1 }
  END {
    printf "# over %d launches: mode, median of the launch medians (ms), their min..max, DDP hidden per launch\n", launches
    for (m = 1; m <= modes; ++m) {
      k = name[m]; c = n[k]
      for (i = 1; i <= c; ++i) s[i] = v[k, i]
      for (i = 1; i <= c; ++i) for (j = i + 1; j <= c; ++j) if (s[j] < s[i]) { t = s[i]; s[i] = s[j]; s[j] = t }
      med = (c % 2) ? s[(c + 1) / 2] : (s[c / 2] + s[c / 2 + 1]) / 2
      printf "%-14s %10.3f  %8.3f..%-8.3f %s\n", k, med, s[1], s[c], h[k]
      if (k == "ddp") ddp = med; else ref[k] = med
    }
    for (k in ref) if (ddp && ref[k]) printf "# ddp / %s = %.3f\n", k, ddp / ref[k]
  }' "$out"
