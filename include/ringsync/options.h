// Every tunable of ringsync, with its default and its environment variable, in one struct.
// Options::fromEnvironment() reads the RINGSYNC_* variables once; a Communicator keeps its copy.
// The settings that change what a rank sends ("Must match on every rank" below) are compared when
// a Communicator is built: ranks that differ all raise MismatchError naming the variable and the
// ranks. Deadlines, ring depths, waiting, logging and the timeline may differ. Plain data: copy
// freely; a Communicator only reads its own copy.
#pragma once

#include <cstddef>
#include <string>

namespace ringsync {

enum class LogLevel { kError, kWarn, kInfo, kDebug };
enum class Algorithm {
  kAuto,
  kRing,
  kDirect,
  kSplit,
  kHierarchical,
  kRecursiveDoubling,
  kMpi,
  kRabenseifner
};                                                          // host algorithm
enum class BackendChoice { kAuto, kRing, kNccl, kStaged };  // where a collective runs

struct Options {
  // RINGSYNC_RING_SEGMENT_BYTES (default 512 KiB; "256K", "1M" accepted) and RINGSYNC_RING_DEPTH
  // (default 2, at least 2): the pipelining unit of the chain broadcast, and of the host ring when
  // every rank is on one node, and how many segments are in flight per direction. Must match on
  // every rank.
  std::size_t ringSegmentBytes = 512 * 1024;
  int ringDepth = 2;
  // RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES (default 63 KiB, which fits Open MPI's TCP eager
  // limit, so no segment waits for a rendezvous) and RINGSYNC_RING_DEPTH_ACROSS_NODES (default 16):
  // the same for the all-reduce rings of a communicator whose ranks span several nodes (the flat
  // ring, and the ring among the nodes of the hierarchical all-reduce). The chain broadcast keeps
  // the settings above. Between two single-rank nodes the ring may send a chunk (half the message)
  // as one message, two in flight, whatever these say. The segment size must match on every rank.
  std::size_t ringSegmentBytesAcrossNodes = 63 * 1024;
  int ringDepthAcrossNodes = 16;
  // RINGSYNC_SMALL_BYTES (default 3 MiB, at most 4 MiB; more raises InvalidArgument): the largest
  // message that may take the direct exchange (every rank's data reaches every peer in one round).
  // On one node broadcasts up to it take the round, all-reduces up to 32 KiB (above that, split).
  // Across nodes at most 32 KiB take it, whatever this says. Must match on every rank.
  std::size_t smallBytes = 3 * 1024 * 1024;
  // RINGSYNC_NETWORK_LATENCY_BYTES (default 1672): the network's latency in bytes of its bandwidth,
  // lambda = (alpha + 2o) / beta (one message's latency plus the CPU time to post and complete it,
  // over the seconds per byte of a node's link). Among 4 or more nodes the automatic choice's
  // crossovers scale with it: recursive doubling up to S1, Rabenseifner from there (and up to S2,
  // the ring or hierarchical above, when the nodes are not a power of two). The default is this
  // project's simulated hosts at 1 Gbit/s ((12 us + 2 us) / 8.37 ns/B); a 100 Gbit/s cluster with
  // 3 us MPI latency is about 45000 (bench/scale_model/README.md). The per-message CPU time o/beta
  // is taken as lambda/14, as in those hosts. Between 1 and 2^30. Must match on every rank.
  std::size_t networkLatencyBytes = 1672;
  // RINGSYNC_REDUCE_TO_LINK_RATIO (default 0.006): gamma/beta, the time a core takes to reduce a
  // byte over the time the link takes to move one (0.05 ns/B against 8.37 ns/B on those hosts; a
  // core reducing at 10 GB/s beside a 100 Gbit/s link: 1.25). It moves S1 down (recursive doubling
  // reduces the whole message at every step, Rabenseifner a part), and above 1 (the link outruns
  // the core) makes the ring take over from Rabenseifner for large messages on a power of two of
  // nodes too. Between 0 and 1000. Must match on every rank.
  double reduceToLinkRatio = 0.006;
  // RINGSYNC_ALGO=auto|ring|direct|split|hierarchical|recursive_doubling|rabenseifner|mpi: force the
  // host all-reduce algorithm (default auto). Must match on every rank.
  //  - auto, all ranks on one node: the direct round for small messages, then split (reduce-scatter
  //    + all-gather through two shared-memory rounds) while a round can hold it, then the ring.
  //    Across nodes: recursive doubling for small and mid-sized messages (a shared-memory round
  //    inside each node, then recursive doubling among the ranks with the same local rank, or
  //    across all ranks when nodes hold one rank or different numbers); above it the hierarchical
  //    all-reduce (split inside each node, the ring across nodes) when every node holds the same
  //    number (>= 2) of ranks, else the ring. Among 4 or more nodes Rabenseifner's all-reduce takes
  //    a middle range of sizes. The sizes at which these switch are internal and may change.
  //  - A forced algorithm that cannot carry a message (too large, split across nodes, hierarchical
  //    on another layout, recursive doubling above a node round) falls back to the automatic
  //    choice or the ring. Forced recursive_doubling or rabenseifner on one node runs across all
  //    ranks (for tests).
  //  - hierarchical also forces the hierarchical broadcast (across nodes with the same number >= 2
  //    of ranks each: the chain among one rank per node, shared memory inside the nodes), which
  //    auto takes there for large broadcasts. Other values leave broadcasts the automatic choice.
  //  - reduce-scatter and all-gather take ring, direct (one round), hierarchical and rabenseifner
  //    (recursive halving / doubling); other values leave them the automatic choice.
  //  - mpi is never chosen automatically: every host all-reduce goes to MPI_Iallreduce, polled
  //    under the deadline, after a round with the fingerprints (a baseline inside the program, as
  //    Horovod's HOROVOD_CPU_OPERATIONS=mpi); broadcasts keep the automatic choice.
  Algorithm algorithm = Algorithm::kAuto;
  // RINGSYNC_BACKEND=auto|ring|nccl|staged: force the backend; one that cannot serve the buffer
  // raises BackendError naming it. Must match on every rank.
  BackendChoice backend = BackendChoice::kAuto;
  // RINGSYNC_TIMEOUT_SECONDS (default 300): deadline of every collective; then TimeoutError and
  // the communicator is aborted. 0 disables the deadline. May differ between ranks.
  double timeoutSeconds = 300.0;
  // RINGSYNC_STALL_WARN_SECONDS (default 60): a warning names the stalled collective and the ranks
  // waited for after this long.
  double stallWarnSeconds = 60.0;
  // RINGSYNC_CHECK=0|1 (default 1): exchange call fingerprints so mismatched calls raise
  // MismatchError instead of hanging. Must match on every rank.
  bool checkCalls = true;
  // RINGSYNC_CHECK_FINITE=0|1 (default 0): raise NonFiniteError naming the ranks whose input holds
  // NaN/Inf (host and staged paths). Must match on every rank.
  bool checkFinite = false;
  // RINGSYNC_SPIN_WAIT=0|1: how a rank waits for its peers. 0 (default): poll for ~20 us, then
  // yield the core at every poll, then (after ~1 ms) sleep in 50 us steps, so that a waiting rank
  // does not take the CPU from the kernel's network processing or from compute threads on shared
  // cores. 1: busy-poll only, for dedicated cores. Also decides whether MpiEnvironment asks Open
  // MPI to yield in its own progress loop (OMPI_MCA_mpi_yield_when_idle=1).
  bool spinWait = false;
  // RINGSYNC_LOG=error|warn|info|debug (default warn): to stderr with a [ringsync rank r] prefix;
  // info logs each call's device, backend, algorithm and why it was chosen.
  LogLevel logLevel = LogLevel::kWarn;
  // RINGSYNC_CUDA_DEVICE: GPU used for NCCL; -1 (default) means the local rank modulo the GPUs
  // visible.
  int cudaDevice = -1;
  // RINGSYNC_BUCKET_BYTES (default 1 MiB) / RINGSYNC_FIRST_BUCKET_BYTES (default 256 KiB):
  // GradientAverager fusion buckets (DDP-like: a small first bucket so communication starts early
  // in backward). Must be positive.
  std::size_t bucketBytes = 1024 * 1024;
  std::size_t firstBucketBytes = 256 * 1024;
  // RINGSYNC_TIMELINE=PATH: record every collective and GradientAverager bucket of the process and
  // write them, merged over the ranks, to PATH as a Chrome trace (Perfetto, chrome://tracing)
  // at MPI_Finalize; also prints the straggler report. Empty: off (no cost).
  // May differ between ranks (rank 0's PATH names the merged file).
  std::string timelinePath;

  // Defaults overridden by the RINGSYNC_* variables that are set. A malformed value raises
  // InvalidArgument naming the variable.
  static Options fromEnvironment();

  // "RINGSYNC_RING_SEGMENT_BYTES=524288 RINGSYNC_ALGO=auto ..." (for bench headers and logs).
  std::string describe() const;

  // Raises InvalidArgument naming the field when a value is out of range.
  void validate() const;
};

const char* algorithmName(Algorithm algorithm);
const char* backendName(BackendChoice backend);
const char* logLevelName(LogLevel level);

// Every value of each choice, in the order the documentation lists them: what the environment
// parser and the Python bindings accept, by the names above.
inline constexpr Algorithm kAllAlgorithms[] = {Algorithm::kAuto,         Algorithm::kRing,
                                               Algorithm::kDirect,       Algorithm::kSplit,
                                               Algorithm::kHierarchical, Algorithm::kRecursiveDoubling,
                                               Algorithm::kRabenseifner, Algorithm::kMpi};
inline constexpr BackendChoice kAllBackends[] = {BackendChoice::kAuto, BackendChoice::kRing, BackendChoice::kNccl,
                                                 BackendChoice::kStaged};
inline constexpr LogLevel kAllLogLevels[] = {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug};

}  // namespace ringsync
