// Every tunable of ringsync, with its default and its environment variable, in one struct.
// Options::fromEnvironment() reads the RINGSYNC_* variables once; a Communicator keeps its copy.
// Every rank must use the same values (they are part of each call's fingerprint).
#pragma once

#include <cstddef>
#include <string>

namespace ringsync {

enum class LogLevel { kError, kWarn, kInfo, kDebug };
enum class Algorithm { kAuto, kRing, kDirect, kSplit, kHierarchical, kRecursiveDoubling, kMpi, kRabenseifner };  // host algorithm
enum class BackendChoice { kAuto, kRing, kNccl, kStaged };    // where a collective runs

struct Options {
  // RINGSYNC_RING_SEGMENT_BYTES and RINGSYNC_RING_DEPTH: the pipelining unit of the chain
  // broadcast, and of the host ring when every rank is on one node, and how many segments are in
  // flight per direction (at least 2). On one node 64 KiB-1 MiB at depth 2-8 all land within the
  // noise (+-10%; allreduce_perf, np=2, 512 KiB-32 MiB).
  std::size_t ringSegmentBytes = 512 * 1024;
  int ringDepth = 2;
  // RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES and RINGSYNC_RING_DEPTH_ACROSS_NODES: the same for
  // the all-reduce of a communicator whose ranks span several nodes (the flat ring, and the ring
  // among the nodes of the hierarchical all-reduce; the chain broadcast keeps the settings above,
  // its data flowing one way; the ring between two single-rank nodes sends a chunk of
  // kAcrossTwoRanksWholeChunkFromBytes..UpToBytes as one message whatever these say). Over TCP every message above Open MPI's
  // eager limit (btl_tcp_eager_limit, 64 KiB with its headers) is a rendezvous: the receiver's
  // go-ahead travels back behind the bulk data queued the other way, and the link idles meanwhile.
  // Segments that fit the limit never wait for it, and 16 of them in flight (1 MiB per direction)
  // keep a link busy without a long queue. Measured on 2 simulated hosts against the previous rule
  // (bench/multihost_ab.sh, 3 interleaved launches; bench/RESULTS.md section 13, "Segments that fit
  // the eager limit"): 2 x 2 at a 2 Gbit/s cap 1.43-1.44x the link rate from 2 MiB in every launch
  // (1.33-1.40x before; 4 MiB 17.5 against 20.2 ms), uncapped 1.50x faster at 1 MiB, 1.19x at 4 MiB,
  // level at 16-64 MiB; 2 x 1 (the flat ring) at the cap 1.05-1.09x faster from 1 MiB, uncapped
  // level but 1.52x at 4 MiB. 32 KiB segments were as good at the cap, 128 KiB ones worse.
  std::size_t ringSegmentBytesAcrossNodes = 63 * 1024;
  int ringDepthAcrossNodes = 16;
  // RINGSYNC_SMALL_BYTES: the largest message that may take the direct exchange (every rank's
  // data reaches every peer in one round, latency 1·α instead of 2(n-1)·α). Capped at
  // kMaxSmallBytes. When all ranks share a node the round goes through shared memory and peers
  // read each other's data in place: broadcasts up to this size take it (1-3 MiB: 1.7x faster than
  // the chain, measured with broadcast_perf --compare mpi, bench/RESULTS.md), all-reduces up to
  // kSplitFromBytes (above that, split). Across nodes the round is MPI point-to-point, where the
  // ring wins above ~32 KiB (np=4), so there the limit is min(smallBytes, kPointToPointSmallBytes).
  // A direct round also moves at most kDirectRoundBytes per rank ((n-1)·S).
  std::size_t smallBytes = 3 * 1024 * 1024;
  // RINGSYNC_ALGO=auto|ring|direct|split|hierarchical|recursive_doubling|rabenseifner|mpi: force the
  // host algorithm. auto, all ranks on one node: direct up to kSplitFromBytes, then split (reduce-scatter
  // + all-gather through the shared-memory rounds, collectives/split_allreduce.h) while every
  // rank's first round fits a slot (kDirectRoundBytes/(n-1): up to 8 MiB at np=2), then the ring.
  // Across nodes: recursive doubling up to kAcrossNodesDoublingBytes (kAcrossManyNodesDoublingBytes
  // among more than two, kAcrossTwoRanksDoublingBytes between two nodes of one rank; a shared-memory round inside
  // each node, then recursive doubling among the ranks with the same local rank, or across all
  // ranks when nodes hold one rank or different numbers; collectives/recursive_doubling_allreduce.h),
  // then hierarchical (split inside each node, the ring across nodes,
  // collectives/hierarchical_allreduce.h) when every node holds the same number (>= 2) of ranks,
  // else the ring. A forced algorithm that cannot carry a message (too large, split across nodes,
  // hierarchical on another layout, recursive doubling above kRecursiveDoublingMaxBytes or a node
  // round) falls back to the automatic choice or the ring; forced recursive doubling on one node
  // runs across all ranks (for tests). Broadcast: across nodes with the same number (>= 2) of ranks
  // each, above the direct round, the chain among one rank per node and shared memory inside the
  // nodes (collectives/hierarchical_broadcast.h); RINGSYNC_ALGO=hierarchical forces it at any size.
  // Among 4 or more butterfly members (nodes, or ranks without a hierarchy) the scale model's
  // crossovers decide instead (src/algorithm_selection.cc, bench/scale_model/README.md): recursive
  // doubling below S1 (2-14 KiB at 1 Gbit/s), Rabenseifner's all-reduce from it
  // (collectives/rabenseifner_allreduce.h), and above S2 (only for node counts that are not powers
  // of two) the ring or the hierarchical all-reduce. rabenseifner forces it at any size (on one
  // node across all ranks, for tests), and its halves (recursive halving / doubling) for
  // reduce-scatter and all-gather.
  // mpi is never chosen automatically: every host all-reduce goes to MPI_Iallreduce, polled under the deadline (a baseline
  // inside the program measured, as Horovod's HOROVOD_CPU_OPERATIONS=mpi; collectives/
  // mpi_allreduce.h); broadcasts keep the automatic choice.
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
  // RINGSYNC_SPIN_WAIT=0|1: how a rank waits for its peers. 0 (default): poll for ~20 us, then
  // yield the core at every poll, then (after ~1 ms) sleep in 50 us steps, so that a waiting rank
  // does not take the CPU from the kernel's network processing or from compute threads on shared
  // cores (collectives/idle_wait.h; across two simulated hosts on 2 cores an 8 B all-reduce took
  // ~6 ms with spinning waits, 0.15-0.2 ms with these, 0.04-0.08 ms with Open MPI's progress loop
  // yielding too, bench/RESULTS.md). 1: busy-poll only, for dedicated cores. Also decides
  // whether MpiEnvironment asks Open MPI to yield in its own progress loop.
  bool spinWait = false;
  // RINGSYNC_LOG=error|warn|info|debug: to stderr with a [ringsync rank r] prefix.
  LogLevel logLevel = LogLevel::kWarn;
  // RINGSYNC_CUDA_DEVICE: GPU used for NCCL; -1 means the local rank modulo the GPUs visible.
  int cudaDevice = -1;
  // RINGSYNC_BUCKET_BYTES / RINGSYNC_FIRST_BUCKET_BYTES: GradientAverager fusion buckets
  // (DDP-like: a small first bucket so communication starts early in backward). 1 MiB measured
  // best with fusion_perf on host buffers (ResNet-50 shapes, np=2: 1 MiB buckets reach ~90% of one
  // all-reduce's busbw, 4 MiB ~84%, 8 MiB ~65%): a bucket's pack/unpack stays in cache, and on one
  // node a bucket's all-reduce goes through shared memory (split) rather than the ring.
  std::size_t bucketBytes = 1024 * 1024;
  std::size_t firstBucketBytes = 256 * 1024;
  // RINGSYNC_TIMELINE=PATH: record every collective and GradientAverager bucket of the process and
  // write them, merged over the ranks, to PATH as a Chrome trace (Perfetto, chrome://tracing)
  // at MPI_Finalize; also prints the straggler report. Empty: off (no cost).
  // May differ between ranks (rank 0's PATH names the merged file).
  std::string timelinePath;

  static constexpr std::size_t kMaxSmallBytes = 4 * 1024 * 1024;
  static constexpr std::size_t kPointToPointSmallBytes = 32 * 1024;
  // What one shared-memory round may carry per rank and peer: a slot holds kDirectRoundBytes/(n-1).
  // Split beats the ring up to 8 MiB at np=2 (allreduce_perf, RINGSYNC_ALGO=split|ring: 4 MiB
  // 1.6-1.7x MPI_Allreduce against 1.2x, 8 MiB 1.4-1.5x against 1.2-1.3x, 16 MiB even), hence 4 MiB.
  static constexpr std::size_t kDirectRoundBytes = 4 * 1024 * 1024;
  // All-reduces on one node above this size take split rather than the direct round (measured
  // crossover: at np=2 split is ahead from ~4 KiB, at np=4 on 2 cores from ~64 KiB).
  static constexpr std::size_t kSplitFromBytes = 32 * 1024;
  // Across two nodes of several ranks each, all-reduces up to this size take recursive doubling,
  // above it the hierarchical all-reduce (two single-rank nodes: kAcrossTwoRanksDoublingBytes;
  // more nodes: kAcrossManyNodesDoublingBytes). Measured on 2 simulated hosts at 2 Gbit/s, 3
  // interleaved launches (bench/multihost_ab.sh --hosts 2 --ranks 2 --rate 2gbit --launches 3
  // --sizes "-b 64K -e 4M -f 2 -n 10 -w 2" "recursive_doubling|build|-x RINGSYNC_ALGO=recursive_doubling"
  // "hierarchical|build|-x RINGSYNC_ALGO=hierarchical"): recursive doubling is ahead up to 512 KiB
  // (2.11 against 2.37 ms), behind from 1 MiB (5.06 against 4.40 ms), where the hierarchical
  // pipelining keeps the link busy (bench/RESULTS.md section 13; 2 x 1 against the ring gave 2.73
  // against 2.99 ms at 512 KiB then, a tie when re-measured: kAcrossTwoRanksDoublingBytes). With 2
  // nodes both send the same bytes; with N > 2 recursive doubling sends log2(N)/(2(N-1)/N) times
  // the ring's, so the crossover there is lower: kAcrossManyNodesDoublingBytes. Re-checked once
  // recursive doubling sent its messages in eager-sized parts (2 x 2 uncapped 678 against 767 us at
  // 512 KiB, 1526 against 1473 at 1 MiB; bench/RESULTS.md section 13, "Recursive doubling in
  // eager-sized parts").
  static constexpr std::size_t kAcrossNodesDoublingBytes = 512 * 1024;
  // The same limit when more than two take part in the doubling (nodes, or every rank where the
  // nodes hold one rank each or different numbers). Measured on 4 simulated hosts at 2 Gbit/s,
  // interleaved launches with the MPI_Allreduce of each launch beside (bench/RESULTS.md section
  // 13): 4 x 1 ranks, recursive doubling against RINGSYNC_ALGO=ring: 32 KiB 221 against 468 us,
  // 64 KiB 500-547 against 508-585, 128 KiB 924-1284 against 767-796, 256 KiB 2183-2659 against
  // 1615-1729; 4 x 2, against RINGSYNC_ALGO=hierarchical: ahead up to 128 KiB (1.39 against 1.55
  // ms), behind at 256-512 KiB (2.17 against 2.02 ms, 4.46 against 4.06).
  static constexpr std::size_t kAcrossManyNodesDoublingBytes = 64 * 1024;
  // The limit between two nodes of one rank each, where the alternative is the flat ring rather
  // than the hierarchical all-reduce: each rank reduces the whole message in recursive doubling,
  // half of it in the ring, whose two halves also overlap the exchange with the reduction. At a
  // rate cap both move the same bytes at the link's rate and tie (64-512 KiB within 1%); uncapped
  // the ring pulls ahead between 160 and 200 KiB. Measured 2026-11-26 (bench/multihost_ab.sh --hosts
  // 2 --ranks 1 [--pin-hosts] [--rate 2gbit] --launches 5 --sizes "-b 64K -e 512K -f 2 -n 50 -w 5",
  // and "-b 128K -e 256K -f 1.25 -n 100 -w 10", "ring|build|-x RINGSYNC_ALGO=ring"
  // "doubling|build|-x RINGSYNC_ALGO=recursive_doubling"; bench/RESULTS.md section 13): uncapped,
  // doubling 105-113 against 119-120 us at 128 KiB, 130 against 135 at 160 KiB, 165-170 against
  // 148-151 at 200 KiB, 215-221 against 192-193 at 256 KiB, 420-438 against 346-353 at 512 KiB.
  static constexpr std::size_t kAcrossTwoRanksDoublingBytes = 160 * 1024;
  // The ring between two nodes of one rank each sends a chunk (half the message) of this many bytes
  // as one message instead of ringSegmentBytesAcrossNodes segments, two in flight. From 192 KiB
  // Open MPI's TCP path sends such a message by its RDMA pipeline (btl_tcp_min_rdma_pipeline_size:
  // 192 KiB by default), writing most of it straight into the receive buffer instead of copying
  // it out of eager fragments, and the ring makes one call per step instead of seven. At a rate cap
  // the rendezvous go-ahead queues behind the bulk data coming the other way: nothing lost up to
  // 400 KiB chunks, 4% at 500 KiB and more above, hence eager-sized segments there. Measured on 2
  // simulated hosts x 1, pinned (bench/RESULTS.md section 13, "Where the two cores go"):
  // bench/multihost_ab.sh --hosts 2 --ranks 1 --pin-hosts [--rate 2gbit] --launches 7 --sizes "-b
  // 640000 -e 800000 -f 1.25 -n 50 -w 5" against the previous build: uncapped 361 against 415 us at
  // 640 KB, 461 against 523 at 800 KB (the trainer's last bucket is 804 KB); at the cap level
  // (3342 against 3347 us at 800 KB, 3 launches). Chunks of 128-160 KiB gained nothing uncapped and
  // once took 1.4x longer at the cap. Not for more ranks: 4 x 1 (four hosts on two cores, which
  // wait for each other's rendezvous replies) was 5-9% slower uncapped with whole chunks of 128-250
  // KiB and 19% at the cap at 128 KiB; nodes of several ranks take recursive doubling, then the
  // hierarchical all-reduce, whose ring keeps its segments.
  static constexpr std::size_t kAcrossTwoRanksWholeChunkFromBytes = 192 * 1024;
  static constexpr std::size_t kAcrossTwoRanksWholeChunkUpToBytes = 400 * 1024;
  // Recursive doubling across nodes of L ranks each: while L x the message's bytes stay below this,
  // every local rank reduces and sends the whole message across, saving a second node round;
  // from it on each sends only its 1/L chunk. Measured on 2 simulated hosts x 2 ranks (bench/
  // RESULTS.md section 13, "Which local ranks send what"): sending the whole message was ahead at
  // 2-8 KiB at 2 Gbit/s (4 KiB 54-58 against 61-72 us) and uncapped up to 16 KiB, and behind at
  // 16 KiB at 2 Gbit/s (134 against 77-92 us), where the doubled bytes meet the link's rate.
  static constexpr std::size_t kAcrossNodesShardFromBytes = 32 * 1024;
  // Across nodes (same number >= 2 of ranks on each), broadcasts above this size take the
  // hierarchical broadcast, from the direct limit up to it the chain. Measured on 2 simulated hosts
  // x 2 ranks at 2 Gbit/s, 3 interleaved launches each of the chain (the branch before the
  // hierarchical broadcast) and of it, roots 0 and 3 (bench/multihost_run.sh --hosts 2 --ranks 2
  // --rate 2gbit -- build/bin/broadcast_perf -b 64K -e 16M -f 4 -n 10 -w 2 -r ROOT --compare mpi):
  // from 1 MiB it is level with the chain from root 0 (whose chain crosses between the hosts once;
  // 0.95x at 16 MiB, where its node rounds do not overlap the chain) and 1.01-1.18x faster from
  // root 3 (whose chain crosses twice; quiet machine); at 64-256 KiB its fingerprint round and
  // sequential phases cost more than they save (bench/RESULTS.md section 13).
  static constexpr std::size_t kHierarchicalBroadcastFromBytes = 512 * 1024;
  // The most recursive doubling takes when forced (each step sends the whole part).
  static constexpr std::size_t kRecursiveDoublingMaxBytes = 4 * 1024 * 1024;

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
inline constexpr Algorithm kAllAlgorithms[] = {Algorithm::kAuto,  Algorithm::kRing,         Algorithm::kDirect,
                                               Algorithm::kSplit, Algorithm::kHierarchical, Algorithm::kRecursiveDoubling,
                                               Algorithm::kRabenseifner, Algorithm::kMpi};
inline constexpr BackendChoice kAllBackends[] = {BackendChoice::kAuto, BackendChoice::kRing, BackendChoice::kNccl,
                                                 BackendChoice::kStaged};
inline constexpr LogLevel kAllLogLevels[] = {LogLevel::kError, LogLevel::kWarn, LogLevel::kInfo, LogLevel::kDebug};

}  // namespace ringsync
