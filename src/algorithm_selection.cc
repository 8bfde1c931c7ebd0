#include "algorithm_selection.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "collectives/recursive_doubling.h"
#include "collectives/recursive_halving_blockwise.h"
#include "collectives/split_allreduce.h"
#include "selection_constants.h"

namespace ringsync::detail {
namespace {

// The direct exchange is one message per peer and a reduction of n payloads: only worth it for few
// ranks. Above this the ring carries small messages too.
constexpr int kDirectMaxRanks = 16;

// RINGSYNC_SMALL_BYTES, and at most kPointToPointSmallBytes when rounds are MPI point-to-point
// (ranks on several nodes): there the ring overtakes the direct exchange much earlier than through
// shared memory (selection_constants.h).
std::size_t directLimit(const SelectionInputs& in) {
  return in.sharedMemoryRounds ? in.options.smallBytes : std::min(in.options.smallBytes, kPointToPointSmallBytes);
}

// Why the ring and not the hierarchical all-reduce, across nodes (static strings: the reason is
// chosen on every call and must not allocate).
const char* ringReason(HierarchyBlocker blocker) {
  switch (blocker) {
    case HierarchyBlocker::kNone: break;
    case HierarchyBlocker::kOneNode: return "large message: the bandwidth-optimal ring";
    case HierarchyBlocker::kOneRankPerNode:
      return "large message across nodes: the bandwidth-optimal ring (no hierarchical: one rank per node)";
    case HierarchyBlocker::kUnevenNodes:
      return "large message across nodes: the bandwidth-optimal ring (no hierarchical: nodes hold different "
             "numbers of ranks)";
    case HierarchyBlocker::kSmallNodeRounds:
      return "large message across nodes: the bandwidth-optimal ring (no hierarchical: node rounds too small, "
             "too many ranks per node or a /dev/shm that cannot hold them)";
  }
  return "large message: the bandwidth-optimal ring";
}

const char* forcedHierarchicalFallback(HierarchyBlocker blocker) {
  switch (blocker) {
    case HierarchyBlocker::kNone: break;
    case HierarchyBlocker::kOneNode:
      return "RINGSYNC_ALGO=hierarchical, but all ranks are on one node: automatic choice";
    case HierarchyBlocker::kOneRankPerNode:
      return "RINGSYNC_ALGO=hierarchical, but there is one rank per node: automatic choice";
    case HierarchyBlocker::kUnevenNodes:
      return "RINGSYNC_ALGO=hierarchical, but nodes hold different numbers of ranks: automatic choice";
    case HierarchyBlocker::kSmallNodeRounds:
      return "RINGSYNC_ALGO=hierarchical, but the node rounds are too small (too many ranks per node or a short "
             "/dev/shm): automatic choice";
  }
  return "RINGSYNC_ALGO=hierarchical";
}

// Where Rabenseifner's butterfly wins across nodes, from the scale model's closed forms
// (bench/scale_model/README.md, "Rabenseifner: where it wins, and the crossovers to use";
// crossovers.py computes them, and checks them against the model's own crossovers). N: the
// butterfly's members (nodes, or ranks where there is no hierarchy), L: ranks per node,
// q = floor(log2 N), p = 2^q, e = [N is not a power of two].
// lambda = (alpha + 2o)/beta, the network's latency in bytes: Options::networkLatencyBytes
// (RINGSYNC_NETWORK_LATENCY_BYTES), by default (12 us + 2 x 1 us) / 8.37 ns/B, the simulated hosts
// at 1 Gbit/s (bench/scale_model/params.json, simulated_1gbit); S1 and S2 scale with it (a 100
// Gbit/s cluster's is ~44 KiB). o/beta, the CPU time of one message posted or completed in bytes
// of the same link, is lambda/14 as in those hosts (1 us of the 14), so alpha/beta is 12/14 of it.
// g = gamma/beta, Options::reduceToLinkRatio (RINGSYNC_REDUCE_TO_LINK_RATIO, 0.006 on those hosts).
struct NetworkCosts {
  double lambda;    // bytes
  double overhead;  // o/beta, bytes
  double g;         // gamma/beta
  explicit NetworkCosts(const Options& options)
      : lambda(static_cast<double>(options.networkLatencyBytes)), overhead(lambda / 14), g(options.reduceToLinkRatio) {}
  double alphaBytes() const { return lambda - 2 * overhead; }
};
// h: the header and call summary every butterfly and recursive-doubling message carries.
constexpr double kSummaryBytes = static_cast<double>(RecursiveDoubling::kPrefixBytes);
// Below 4 members it never wins: N = 3's pre/post step costs what it saves, N = 2 is the ring's schedule.
constexpr int kButterflyMinMembers = 4;
// The hierarchical all-reduce's pieces (hierarchical_allreduce.cc's kPipelinePieceBytes), each of
// which pays its ring's 2(N-1) latencies.
constexpr double kHierarchicalPieceBytes = 2 << 20;

struct ButterflyShape {
  int q = 0, p = 1, e = 0;
  explicit ButterflyShape(int members) {
    while (p * 2 <= members) p *= 2, ++q;
    e = members > p ? 1 : 0;
  }
};

// S1, recursive doubling -> Rabenseifner: (q+e)(lambda + L·h) / ((q - 2 + 2/p) + (q+e)·g/L), from
// equal times (the doubling sends and reduces S at each of its q steps, the butterfly moves
// 2(p-1)/p·S in all, in q+e more latencies; both fold alike; crossovers.py's s1).
double rabenseifnerFromBytes(int members, int ranksPerNode, const NetworkCosts& net) {
  const ButterflyShape b(members);
  const double denominator = b.q - 2 + 2.0 / b.p + (b.q + b.e) * net.g / ranksPerNode;
  if (denominator <= 0) return std::numeric_limits<double>::infinity();
  return (b.q + b.e) * (net.lambda + ranksPerNode * kSummaryBytes) / denominator;
}

// S2, Rabenseifner -> the ring (or the hierarchical all-reduce), N not a power of two, where the
// pre/post step's 2S outweigh the ring's extra latencies: ((N-1)(lambda + o/beta) - (q+1)(lambda + h))
// / (1 - 1/p + 1/N). A power of two moves the ring's bytes in 2 log2 N latencies: never while a
// core reduces faster than the link moves (g <= 1); else the ring's overlap of reduction and
// transfer gains (p-1)/p·S·min(g-1, 1) for its 2(N-1-q) more latencies:
// S2' = 2(N-1-q)·(alpha/beta)·p / ((p-1)·min(g-1, 1)) (crossovers.py's s2_reduction_bound).
double rabenseifnerUpToBytes(int members, const NetworkCosts& net) {
  const ButterflyShape b(members);
  if (b.e == 0) {
    if (net.g <= 1) return std::numeric_limits<double>::infinity();
    return 2 * (members - 1 - b.q) * net.alphaBytes() * b.p / ((b.p - 1) * std::min(net.g - 1, 1.0));
  }
  const double n = members;
  return std::max(0.0, ((n - 1) * (net.lambda + net.overhead) - (b.q + 1) * (net.lambda + kSummaryBytes)) /
                           (1 - 1.0 / b.p + 1 / n));
}

// Whether the hierarchical all-reduce's 2(N-1) latencies per piece cost less than the 2S the
// pre/post step adds: (N - q - 2)·lambda < Q, Q its piece (what a node round holds, <= 2 MiB).
bool hierarchicalKeepsUp(const SelectionInputs& in, int ranksPerNode) {
  const ButterflyShape b(in.doublingMembers);
  const double piece = std::min(kHierarchicalPieceBytes,
                                static_cast<double>(in.nodeRoundPayloadBytes) * ranksPerNode / (ranksPerNode - 1));
  return (in.doublingMembers - b.q - 2) * NetworkCosts(in.options).lambda < piece;
}

// The same crossover for the halves alone (n-block arrays of S bytes in all): the butterfly pays
// q+2 messages and, n not a power of two, the whole array once more than the ring's (n-1)/n of it:
// ((n-1)(lambda + o/beta) - (q+2)(lambda + h)) / (1 - 1/p + 2/n); a power of two: never.
double halvesUpToBytes(int members, const NetworkCosts& net) {
  const ButterflyShape b(members);
  if (b.e == 0) return std::numeric_limits<double>::infinity();
  const double n = members;
  return std::max(0.0, ((n - 1) * (net.lambda + net.overhead) - (b.q + 2) * (net.lambda + kSummaryBytes)) /
                           (1 - 1.0 / b.p + 2 / n));
}

Selection chooseAutomatically(const SelectionInputs& in);

// Whether the rounds go through shared memory and carry enough per rank for the round-based
// algorithms to take a message of any length in pieces (split, and the direct reduce-scatter and
// all-gather in slices): every rank on one node, at most kDirectMaxRanks of them.
bool roundsServePieces(const SelectionInputs& in) {
  return in.sharedMemoryRounds && in.size > 1 && in.roundPayloadBytes >= kRoundPiecesFromBytes;
}

// Whether recursive doubling can take the message: with a hierarchy the node round carries it whole.
bool doublingFits(const SelectionInputs& in, std::size_t bytes) {
  return bytes <= kRecursiveDoublingMaxBytes &&
         (in.hierarchy != HierarchyBlocker::kNone || bytes <= in.nodeRoundPayloadBytes);
}

const char* doublingReason(HierarchyBlocker blocker) {
  switch (blocker) {
    case HierarchyBlocker::kNone:
      return "small/mid message across nodes: reduce in the node through shared memory, recursive doubling across "
             "nodes (log2 N latencies, fingerprints on the messages; the nodes' leaders alone below the shard size)";
    case HierarchyBlocker::kOneRankPerNode:
      return "small/mid message across nodes, one rank per node: recursive doubling across all ranks (log2 n "
             "latencies)";
    case HierarchyBlocker::kUnevenNodes:
      return "small/mid message across nodes of different sizes: recursive doubling across all ranks (log2 n "
             "latencies)";
    case HierarchyBlocker::kSmallNodeRounds:
      return "small/mid message across nodes (node rounds too small): recursive doubling across all ranks";
    case HierarchyBlocker::kOneNode: break;
  }
  return "RINGSYNC_ALGO=recursive_doubling: across all ranks";
}

// Across nodes with at least kButterflyMinMembers butterfly members, the scale model's rule
// (bench/scale_model/crossovers.py, proposed()): recursive doubling below S1, Rabenseifner from
// S1, and from S2 (N not a power of two) the ring, or the hierarchical all-reduce where its
// per-piece latencies keep up (never the direct round across nodes: n-1 messages per rank).
// Null: the rules of chooseAutomatically decide (fewer members, one node).
std::optional<Selection> chooseAmongManyNodes(const SelectionInputs& in, std::size_t bytes, bool forcedHierarchical) {
  if (in.hierarchy == HierarchyBlocker::kOneNode || in.doublingMembers < kButterflyMinMembers) return std::nullopt;
  const int ranksPerNode = in.hierarchy == HierarchyBlocker::kNone ? in.size / in.doublingMembers : 1;
  const auto size = static_cast<double>(bytes);
  const NetworkCosts net(in.options);
  if (size < rabenseifnerFromBytes(in.doublingMembers, ranksPerNode, net) && doublingFits(in, bytes))
    return Selection{AlgorithmId::kRecursiveDoublingAllreduce,
                     "small message across many nodes: recursive doubling (log2 N latencies; below Rabenseifner's S1)"};
  const bool butterfly = size < rabenseifnerUpToBytes(in.doublingMembers, net) ||
                         (ranksPerNode > 1 && !hierarchicalKeepsUp(in, ranksPerNode));
  if (butterfly)
    return Selection{AlgorithmId::kRabenseifnerAllreduce,
                     forcedHierarchical
                         ? "RINGSYNC_ALGO=hierarchical, but the layout allows none: automatic choice, "
                           "Rabenseifner"
                         : "mid-sized/large message across many nodes: Rabenseifner (2 log2 N latencies, "
                           "the ring's bytes; from S1, below S2)"};
  if (in.hierarchy == HierarchyBlocker::kNone)
    return Selection{AlgorithmId::kHierarchicalAllreduce,
                     "large message across many nodes, L ranks per node: reduce-scatter in the node, ring across "
                     "nodes, all-gather in the node (from S2)"};
  return Selection{AlgorithmId::kRingAllreduce,
                   forcedHierarchical ? forcedHierarchicalFallback(in.hierarchy) : ringReason(in.hierarchy)};
}

Selection chooseAllreduce(const SelectionInputs& in) {
  if (in.options.algorithm == Algorithm::kMpi)
    return {AlgorithmId::kMpiAllreduce, "RINGSYNC_ALGO=mpi: MPI_Iallreduce, polled under the deadline"};
  // Any size, any layout; on one node across all ranks (for tests).
  if (in.options.algorithm == Algorithm::kRabenseifner && in.size > 1)
    return {AlgorithmId::kRabenseifnerAllreduce,
            in.hierarchy == HierarchyBlocker::kNone
                ? "RINGSYNC_ALGO=rabenseifner: split in the node, butterfly across nodes"
                : "RINGSYNC_ALGO=rabenseifner: across all ranks"};
  const Selection automatic = chooseAutomatically(in);
  if (in.options.algorithm != Algorithm::kRecursiveDoubling ||
      automatic.algorithm == AlgorithmId::kRecursiveDoublingAllreduce)
    return automatic;
  if (in.size > 1 && doublingFits(in, in.count * in.elementBytes))
    return {AlgorithmId::kRecursiveDoublingAllreduce,
            in.hierarchy == HierarchyBlocker::kNone ? "RINGSYNC_ALGO=recursive_doubling: node round, then across nodes"
                                                    : "RINGSYNC_ALGO=recursive_doubling: across all ranks"};
  return {automatic.algorithm,
          "RINGSYNC_ALGO=recursive_doubling, but the message is larger than it takes: automatic choice"};
}

Selection chooseAutomatically(const SelectionInputs& in) {
  const std::size_t bytes = in.count * in.elementBytes;
  const bool directFits = bytes <= in.roundPayloadBytes;
  // Split needs shared-memory rounds; a message past what one round carries goes in pieces of it
  // (split_allreduce.h), ahead of the ring at every size measured (selection_constants.h).
  const bool splitServes = roundsServePieces(in);
  switch (in.options.algorithm) {
    case Algorithm::kRing: return {AlgorithmId::kRingAllreduce, "RINGSYNC_ALGO=ring"};
    case Algorithm::kDirect:
      return directFits
                 ? Selection{AlgorithmId::kDirectAllreduce, "RINGSYNC_ALGO=direct"}
                 : Selection{AlgorithmId::kRingAllreduce, "RINGSYNC_ALGO=direct, but the message exceeds a round"};
    case Algorithm::kSplit:
      return splitServes ? Selection{AlgorithmId::kSplitAllreduce, "RINGSYNC_ALGO=split"}
                         : Selection{AlgorithmId::kRingAllreduce,
                                     "RINGSYNC_ALGO=split, but split needs one node and shared-memory rounds"};
    case Algorithm::kHierarchical:
      if (in.hierarchy == HierarchyBlocker::kNone)
        return {AlgorithmId::kHierarchicalAllreduce, "RINGSYNC_ALGO=hierarchical"};
      break;                             // the automatic choice below, with the reason why not
    case Algorithm::kRecursiveDoubling:  // chooseAllreduce decides, after this
    case Algorithm::kMpi:                // chosen before this, for all-reduces only
    case Algorithm::kRabenseifner:       // likewise (one rank: the automatic choice)
    case Algorithm::kAuto: break;
  }
  const bool forcedHierarchical = in.options.algorithm == Algorithm::kHierarchical;
  if (const std::optional<Selection> manyNodes = chooseAmongManyNodes(in, bytes, forcedHierarchical)) return *manyNodes;
  // Across nodes, small and mid-sized messages: latency decides, and recursive doubling pays one
  // cross-node latency per doubling (one for 2 nodes) where the direct exchange sends n-1 messages
  // per rank and the hierarchical ring a fingerprint round and 2(N-1) steps (selection_constants.h:
  // kAcrossNodesDoublingBytes says where it stops winning, and where that was measured: 512 KiB
  // between 2 nodes, 64 KiB among more, kAcrossManyNodesDoublingBytes; 160 KiB between two
  // single-rank nodes, against the flat ring, kAcrossTwoRanksDoublingBytes). Against the direct exchange it replaces
  // here (measured in the same way, 2 hosts x 2 ranks at 2 Gbit/s, "-b 8 -e 64K -f 8 -n 50 -w 5", RINGSYNC_ALGO=direct
  // against auto): 1.2-2.4x faster at 8 B-32 KiB; 2 hosts x 1 rank the same within noise (one message each way either
  // way).
  const bool acrossNodes = in.hierarchy != HierarchyBlocker::kOneNode;
  const std::size_t doublingLimit = in.doublingMembers > 2                    ? kAcrossManyNodesDoublingBytes
                                    : in.hierarchy == HierarchyBlocker::kNone ? kAcrossNodesDoublingBytes
                                                                              : kAcrossTwoRanksDoublingBytes;
  if (acrossNodes && in.size > 1 && bytes <= doublingLimit && doublingFits(in, bytes))
    return {AlgorithmId::kRecursiveDoublingAllreduce, doublingReason(in.hierarchy)};
  const bool directWanted = directFits && bytes <= directLimit(in);
  if (directWanted && (bytes <= kSplitFromBytes || !splitServes))
    return {AlgorithmId::kDirectAllreduce, forcedHierarchical ? forcedHierarchicalFallback(in.hierarchy)
                                                              : "small message: one round (latency 1 alpha)"};
  if (splitServes && bytes > kSplitFromBytes)
    return {AlgorithmId::kSplitAllreduce,
            forcedHierarchical ? forcedHierarchicalFallback(in.hierarchy)
                               : "mid-sized or large message on one node: two shared-memory rounds per piece"};
  // Across nodes above the direct limit: reduce inside the nodes through shared memory, so that
  // only 1/L of the message per rank crosses the network.
  if (in.hierarchy == HierarchyBlocker::kNone)
    return {AlgorithmId::kHierarchicalAllreduce,
            "across nodes, L ranks per node: reduce-scatter in the node, ring across nodes, all-gather in the node"};
  return {AlgorithmId::kRingAllreduce,
          forcedHierarchical ? forcedHierarchicalFallback(in.hierarchy) : ringReason(in.hierarchy)};
}

// Across nodes with the same number (>= 2) of ranks on each, above kHierarchicalBroadcastFromBytes
// (selection_constants.h says where it was measured): the chain among one rank per node, then shared
// memory (hierarchical_broadcast.h), so the message crosses into each node once whatever the rank
// numbering. RINGSYNC_ALGO=hierarchical forces it wherever the layout allows.
Selection chooseBroadcast(const SelectionInputs& in) {
  const std::size_t bytes = in.count * in.elementBytes;
  const bool hierarchical = in.hierarchy == HierarchyBlocker::kNone;
  if (hierarchical && in.options.algorithm == Algorithm::kHierarchical)
    return {AlgorithmId::kHierarchicalBroadcast, "RINGSYNC_ALGO=hierarchical"};
  if (bytes <= in.roundPayloadBytes && bytes <= directLimit(in))
    return {AlgorithmId::kDirectBroadcast, "small message: the root's data in one round"};
  if (hierarchical && bytes > kHierarchicalBroadcastFromBytes)
    return {AlgorithmId::kHierarchicalBroadcast,
            "across nodes, L ranks per node: chain among one rank per node, shared memory inside the nodes"};
  return {AlgorithmId::kChainBroadcast, "large message: pipelined chain"};
}

// Reduce-scatter and all-gather: one round while its payload fits one (every block but the own
// for a reduce-scatter, the own block for an all-gather): one latency, n-1 blocks moved at once
// (through shared memory on one node, no MPI message at all); then the hierarchical algorithm
// where the nodes hold L >= 2 ranks each, Rabenseifner's halves across many nodes without one
// (log2 n steps), else the ring, n-1 steps of one block each. (count is a block's elements.)
Selection chooseBlockwise(const SelectionInputs& in) {
  const bool reduceScatter = in.kind == CollectiveKind::kReduceScatter;
  const AlgorithmId round = reduceScatter ? AlgorithmId::kDirectReduceScatter : AlgorithmId::kDirectAllgather;
  const AlgorithmId ring = reduceScatter ? AlgorithmId::kRingReduceScatter : AlgorithmId::kRingAllgather;
  const AlgorithmId hierarchical = reduceScatter ? AlgorithmId::kHierarchicalReduceScatter
                                                 : AlgorithmId::kHierarchicalAllgather;
  const AlgorithmId butterfly = reduceScatter ? AlgorithmId::kRecursiveHalvingReduceScatter
                                              : AlgorithmId::kRecursiveDoublingAllgather;
  const bool hierarchyBuilt = in.hierarchy == HierarchyBlocker::kNone;
  const std::size_t blockBytes = in.count * in.elementBytes;
  const std::size_t roundBytes = reduceScatter ? blockBytes * static_cast<std::size_t>(std::max(in.size - 1, 0))
                                               : blockBytes;
  const bool roundFits = roundBytes <= in.roundPayloadBytes;
  switch (in.options.algorithm) {
    case Algorithm::kRing: return {ring, "RINGSYNC_ALGO=ring"};
    case Algorithm::kDirect:
      return {round, roundFits ? "RINGSYNC_ALGO=direct" : "RINGSYNC_ALGO=direct: the blocks in slices, one round each"};
    case Algorithm::kHierarchical:
      if (hierarchyBuilt) return {hierarchical, "RINGSYNC_ALGO=hierarchical"};
      break;                        // the automatic choice
    case Algorithm::kRabenseifner:  // its halves, on any layout
      if (in.size > 1)
        return {butterfly, "RINGSYNC_ALGO=rabenseifner: its half (through the nodes where they hold L >= 2 ranks)"};
      break;
    case Algorithm::kSplit:
    case Algorithm::kRecursiveDoubling:
    case Algorithm::kMpi:  // all-reduce algorithms: the automatic choice here
    case Algorithm::kAuto: break;
  }
  if (in.sharedMemoryRounds && (roundFits || roundsServePieces(in)))
    return {round, roundFits ? "blocks that fit a shared-memory round: one round, no MPI message"
                             : "large blocks on one node: shared-memory rounds, the blocks in slices"};
  // Across nodes of L >= 2 ranks, small arrays: latency decides (selection_constants.h). The
  // tiniest go as one all-reduce of the whole array (one node round, one exchange of it across);
  // then the halves through the nodes (recursive_halving_blockwise.h): a group across, no
  // fingerprint round across the nodes as the hierarchical versions pay first. Above, the
  // hierarchical versions: pipelined pieces. (The round sends every block to every peer across.)
  // With one rank per node the round stays while it fits: its n-1 messages go out at once.
  const std::size_t arrayBytes = blockBytes * static_cast<std::size_t>(in.size);
  if (hierarchyBuilt && arrayBytes <= kHalvesThroughNodesUpToBytes && in.doublingMembers > 1 &&
      halvesNodeRoundBytes(in.kind, blockBytes, in.size / in.doublingMembers, in.doublingMembers) <=
          in.nodeRoundPayloadBytes)
    return {butterfly, reduceScatter ? "small array across nodes: the node's shared memory, then recursive halving "
                                       "among the nodes' leaders (log2 N latencies)"
                                     : "small array across nodes: the node's shared memory, then recursive doubling "
                                       "among the nodes' leaders (log2 N latencies)"};
  if (hierarchyBuilt)
    return {hierarchical, "across nodes, L ranks per node: shared memory inside the nodes, the ring across them"};
  if (roundFits) return {round, "small blocks: one round (latency 1 alpha)"};
  // Across nodes without a hierarchy, past the round: log2 n latencies instead of the ring's n-1,
  // the same bytes for n a power of two (always), up to halvesUpToBytes otherwise.
  if (in.hierarchy != HierarchyBlocker::kOneNode && in.size >= kButterflyMinMembers &&
      static_cast<double>(arrayBytes) < halvesUpToBytes(in.size, NetworkCosts(in.options)))
    return {butterfly, reduceScatter ? "blocks past a round across many nodes: recursive halving (log2 n latencies)"
                                     : "blocks past a round across many nodes: recursive doubling (log2 n latencies)"};
  return {ring, "large blocks: the bandwidth-optimal ring"};
}

}  // namespace

Selection chooseAlgorithm(const SelectionInputs& in) {
  switch (in.kind) {
    case CollectiveKind::kAllreduce: return chooseAllreduce(in);
    case CollectiveKind::kBroadcast: return chooseBroadcast(in);
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllgather: return chooseBlockwise(in);
    default: return {firstAlgorithmOf(in.kind).id, "the collective's one algorithm"};  // barrier: one round
  }
}

RoundCapacity roundCapacity(int size, const Options& options) {
  if (size > kDirectMaxRanks) return {};
  // Shared-memory slots as large as a round may ever be (RINGSYNC_SMALL_BYTES only decides which
  // calls take the direct round; split needs the room whatever it says). Across nodes only direct
  // rounds carry data, up to the point-to-point limit unless direct is forced.
  const std::size_t pointToPoint = options.algorithm == Algorithm::kDirect
                                       ? kMaxSmallBytes
                                       : std::min(options.smallBytes, kPointToPointSmallBytes);
  auto perPeerCap = [size](std::size_t requested) {
    if (size < 2) return requested;
    return std::min(requested, kDirectRoundBytes / static_cast<std::size_t>(size - 1));
  };
  return {perPeerCap(kMaxSmallBytes), perPeerCap(pointToPoint)};
}

}  // namespace ringsync::detail
