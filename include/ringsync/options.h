// Every tunable of ringsync, with its default and its environment variable, in one struct.
// Options::fromEnvironment() reads the RINGSYNC_* variables once; a Communicator keeps its copy.
// Every rank must use the same values (they are part of each call's fingerprint).
#pragma once

#include <cstddef>
#include <string>

namespace ringsync {

enum class LogLevel { kError, kWarn, kInfo, kDebug };
enum class Algorithm { kAuto, kRing, kDirect };               // host all-reduce algorithm
enum class BackendChoice { kAuto, kRing, kNccl, kStaged };    // where a collective runs

struct Options {
  // RINGSYNC_RING_SEGMENT_BYTES: pipelining unit of the host ring and of broadcast. Measured
  // (allreduce_perf, np=2, 512 KiB-32 MiB): 64 KiB-1 MiB segments at depth 2-8 all land within
  // the machine's noise (+-10%); 256 KiB keeps a segment and the one being reduced in L2.
  std::size_t ringSegmentBytes = 256 * 1024;
  // RINGSYNC_RING_DEPTH: segments in flight per direction (at least 2).
  int ringDepth = 4;
  // RINGSYNC_SMALL_BYTES: all-reduces and broadcasts of at most this many bytes use the direct
  // exchange (every rank's data reaches every peer in one round, latency 1·α instead of
  // 2(n-1)·α). Capped at kMaxSmallBytes. When all ranks share a node the round goes through
  // shared memory and peers read each other's data in place. Measured with allreduce_perf /
  // broadcast_perf --compare mpi on this 2-core machine (bench/RESULTS.md): at np=2 the direct
  // round beats the ring up to ~3 MiB (1.5 MiB: 1.32x MPI_Allreduce against 0.99x for the ring,
  // 2 MiB: 1.30x against 1.05x, 3 MiB: even), and beats the chain broadcast at 1-3 MiB by 1.7x;
  // hence 3 MiB. Two limits apply whatever this says: a direct round moves at most
  // kDirectRoundBytes per rank ((n-1)·S: with n ranks at most 3 MiB/(n-1) go direct), and across
  // nodes the round is MPI point-to-point, where the ring wins above ~32 KiB (np=4), so there the
  // limit is min(smallBytes, kPointToPointSmallBytes).
  std::size_t smallBytes = 3 * 1024 * 1024;
  // RINGSYNC_ALGO=auto|ring|direct: force the host all-reduce algorithm.
  Algorithm algorithm = Algorithm::kAuto;
  // RINGSYNC_BACKEND=auto|ring|nccl|staged: force the backend; one that cannot serve the buffer
  // raises BackendError naming it.
  BackendChoice backend = BackendChoice::kAuto;
  // RINGSYNC_TIMEOUT_SECONDS: deadline of every collective; then TimeoutError and the
  // communicator is aborted. 0 disables the deadline.
  double timeoutSeconds = 300.0;
  // RINGSYNC_STALL_WARN_SECONDS: a warning names the stalled collective after this long.
  double stallWarnSeconds = 60.0;
  // RINGSYNC_CHECK=0|1: exchange call fingerprints so mismatched calls raise MismatchError.
  bool checkCalls = true;
  // RINGSYNC_CHECK_FINITE=0|1: raise NonFiniteError naming the ranks whose input holds NaN/Inf.
  bool checkFinite = false;
  // RINGSYNC_LOG=error|warn|info|debug: to stderr with a [ringsync rank r] prefix.
  LogLevel logLevel = LogLevel::kWarn;
  // RINGSYNC_CUDA_DEVICE: GPU used for NCCL; -1 means the local rank modulo the GPUs visible.
  int cudaDevice = -1;
  // RINGSYNC_BUCKET_BYTES / RINGSYNC_FIRST_BUCKET_BYTES: GradientAverager fusion buckets
  // (DDP-like: a small first bucket so communication starts early in backward). 1 MiB measured
  // best with fusion_perf on host buffers (ResNet-50 shapes, np=2: 1 MiB buckets reach ~90% of one
  // all-reduce's busbw, 4 MiB ~84%, 8 MiB ~65%): a bucket's pack/unpack stays in cache, and a
  // bucket within RINGSYNC_SMALL_BYTES takes the one-round shared-memory exchange.
  std::size_t bucketBytes = 1024 * 1024;
  std::size_t firstBucketBytes = 256 * 1024;

  static constexpr std::size_t kMaxSmallBytes = 3 * 1024 * 1024;
  static constexpr std::size_t kPointToPointSmallBytes = 32 * 1024;
  static constexpr std::size_t kDirectRoundBytes = 3 * 1024 * 1024;

  // Defaults overridden by the RINGSYNC_* variables that are set. A malformed value raises
  // InvalidArgument naming the variable.
  static Options fromEnvironment();

  // "RINGSYNC_RING_SEGMENT_BYTES=262144 RINGSYNC_ALGO=auto ..." (for bench headers and logs).
  std::string describe() const;

  // Raises InvalidArgument naming the field when a value is out of range.
  void validate() const;
};

const char* algorithmName(Algorithm algorithm);
const char* backendName(BackendChoice backend);
const char* logLevelName(LogLevel level);

}  // namespace ringsync
