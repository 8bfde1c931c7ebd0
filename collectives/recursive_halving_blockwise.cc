#include "recursive_halving_blockwise.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "another_algorithm_watch.h"
#include "butterfly.h"
#include "node_hierarchy.h"
#include "node_leader.h"
#include "reduce_kernels.h"

namespace ringsync::detail {
namespace {

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

void copyBytesIfAny(std::byte* target, const void* source, std::size_t bytes) {
  if (bytes > 0 && target != source) std::memcpy(target, source, bytes);
}

// One butterfly across all ranks.
template <typename Fn> void acrossAllRanks(AlgorithmContext& context, Fn&& run) {
  CallSummary summary;
  summary.add(context.rank, context.header);
  Butterfly butterfly({context.comm, context.rank, context.size, nullptr}, *context.doublingBuffers,
                      *context.pieceScratch, context.header, summary, context.deadline);
  butterfly.guarded([&] { run(butterfly); });
  raiseOnDisagreement(context, summary);
}

// This node's round just completed: every local rank's call, under the ranks the errors name.
CallSummary nodeSummary(const NodeHierarchy& h) {
  CallSummary summary;
  for (int r = 0; r < h.localSize; ++r)
    summary.add(h.nodeGlobalRanks[static_cast<std::size_t>(r)], h.nodeRounds->header(r));
  return summary;
}

Butterfly crossButterfly(AlgorithmContext& context, CallSummary& summary) {
  NodeHierarchy& h = *context.hierarchy;
  return Butterfly({h.crossComm, h.nodeIndex, h.nodes, &h.crossGlobalRanks}, *context.doublingBuffers,
                   *context.pieceScratch, context.header, summary, context.deadline);
}

// Through the node's leader (local rank 0), as Open MPI's HAN does: one node round hands the leader
// every local rank's input, the leaders alone run the butterfly among the nodes over each node's L
// blocks, and a second node round hands the node its result (node_leader.h). The leaders' array
// holds the blocks node by node (the leaders' order), local rank by local rank inside a node.
// *roundsOpen: the node rounds this rank has begun and would take back.
std::size_t leaderOffset(const NodeHierarchy& h, int rank, std::size_t blockBytes) {
  const auto g = static_cast<std::size_t>(rank);
  return static_cast<std::size_t>(h.leaderIndexOf[g] * h.localSize + h.localRankOf[g]) * blockBytes;
}

// The call's first node round: this rank's input to the node's leader (pieces 0: the leader of a
// reduce-scatter publishes nothing, it reads the others' inputs).
void firstNodeRound(AlgorithmContext& context, const PayloadPiece& input, std::size_t pieces, int* roundsOpen) {
  NodeHierarchy& h = *context.hierarchy;
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  h.nodeRounds->begin(context.header, &input, pieces);
  *roundsOpen = 1;
  h.nodeRounds->complete(context.deadline);
}

void allgatherThroughLeader(AlgorithmContext& context, const Call& call, int* roundsOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const int L = h.localSize, n = context.size;
  const std::size_t blockBytes = call.blockBytes(), nodeBytes = static_cast<std::size_t>(L) * blockBytes;
  const std::size_t arrayBytes = static_cast<std::size_t>(n) * blockBytes;
  RoundTransport& round = *h.nodeRounds;
  firstNodeRound(context, {call.send, blockBytes}, 1, roundsOpen);
  CallSummary summary = nodeSummary(h);
  const bool nodeAgreed = !summary.disagrees();
  LeaderResult result;
  if (h.localRank == 0) {
    std::byte* array = leaderResultSpace(h, arrayBytes, nodeBytes);
    std::byte* nodeBlocks = array + arrayBytes;
    if (nodeAgreed) {
      round.requirePayloadBytes([&](int) { return blockBytes; });
      for (int m = 0; m < L; ++m)
        copyBytesIfAny(nodeBlocks + static_cast<std::size_t>(m) * blockBytes, m == 0 ? call.send : round.payload(m),
                       blockBytes);
    }
    Butterfly butterfly = crossButterfly(context, summary);
    PeerNames names(context.deadline);
    names.use(h.crossGlobalRanks);
    butterfly.guarded(
        [&] { butterfly.allgather(nodeBlocks, array, static_cast<std::size_t>(L) * call.count, call.type); });
    *roundsOpen = 0;  // every leader passed its node round: the butterfly carried every rank's call
    result = handResultToNode(context, summary, nodeAgreed, arrayBytes);
  } else {
    result = resultFromLeader(context, summary, arrayBytes, roundsOpen);
  }
  raiseOnDisagreement(context, result.summary);
  for (int g = 0; g < n; ++g)
    copyBytesIfAny(at(call.recv, static_cast<std::size_t>(g) * call.count, call.elementBytes()),
                   result.data + leaderOffset(h, g, blockBytes), blockBytes);
}

void reduceScatterThroughLeader(AlgorithmContext& context, const Call& call, ReduceOp op, int divisor,
                                int* roundsOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const int L = h.localSize, n = context.size;
  const std::size_t blockBytes = call.blockBytes(), nodeBytes = static_cast<std::size_t>(L) * blockBytes;
  const std::size_t arrayBytes = static_cast<std::size_t>(n) * blockBytes;
  RoundTransport& round = *h.nodeRounds;
  const bool leader = h.localRank == 0;
  firstNodeRound(context, {call.send, arrayBytes}, leader ? 0 : 1, roundsOpen);
  CallSummary summary = nodeSummary(h);
  const bool nodeAgreed = !summary.disagrees();
  LeaderResult result;
  if (leader) {
    std::byte* reduced = leaderResultSpace(h, nodeBytes, arrayBytes);
    std::byte* nodeSum = reduced + nodeBytes;  // the node's sum in the leaders' order
    if (nodeAgreed) {
      round.requirePayloadBytes([&](int m) { return m == 0 ? 0 : arrayBytes; });
      for (int g = 0; g < n; ++g) {  // local ranks in order: every node reduces the same way
        std::byte* target = nodeSum + leaderOffset(h, g, blockBytes);
        const std::size_t offset = static_cast<std::size_t>(g) * blockBytes;
        const void* acc = at(call.send, static_cast<std::size_t>(g) * call.count, call.elementBytes());
        for (int m = 1; m < L; ++m) {
          reduceElements(target, acc, round.payload(m) + offset, call.count, call.type, op);
          acc = target;
        }
      }
    }
    Butterfly butterfly = crossButterfly(context, summary);
    PeerNames names(context.deadline);
    names.use(h.crossGlobalRanks);
    butterfly.guarded([&] {
      butterfly.reduceScatter(nodeSum, reduced, static_cast<std::size_t>(L) * call.count, call.type, op, divisor);
    });
    *roundsOpen = 0;  // every leader passed its node round: the butterfly carried every rank's call
    result = handResultToNode(context, summary, nodeAgreed, nodeBytes);
  } else {
    result = resultFromLeader(context, summary, nodeBytes, roundsOpen);
  }
  raiseOnDisagreement(context, result.summary);
  copyBytesIfAny(static_cast<std::byte*>(call.recv), result.data + static_cast<std::size_t>(h.localRank) * blockBytes,
                 blockBytes);
}

// Under the watch for a peer that took another algorithm; across the nodes' shared memory when the
// nodes hold L >= 2 ranks and the node rounds take the call, else one butterfly across all ranks.
template <typename AcrossNodes, typename AcrossAll>
void runHalf(AlgorithmContext& context, const Call& call, AcrossNodes&& acrossNodes, AcrossAll&& acrossAll) {
  if (call.scattered != nullptr || context.doublingBuffers == nullptr || context.pieceScratch == nullptr)
    throw InvalidArgument(std::string(collectiveName(call.kind)) +
                          ": the butterfly takes contiguous buffers and the communicator's doubling buffers and "
                          "working memory");
  NodeHierarchy* h = context.hierarchy;
  const bool throughNodes = h != nullptr && halvesNodeRoundBytes(call.kind, call.blockBytes(), h->localSize,
                                                                 h->nodes) <= h->nodeRounds->maxPayloadBytes();
  // A flat butterfly where nodes hold L >= 2 ranks: a peer in another call may be in a node round
  // (this algorithm's, the hierarchical Rabenseifner's or recursive doubling's), waiting for this
  // rank to join it: only a round on the whole communicator brings it out (its watch looks for one).
  if (h != nullptr && !throughNodes) fingerprintRound(context);
  int nodeRoundsOpen = 0;
  try {
    AnotherAlgorithmWatch watch(context);
    if (throughNodes) {
      acrossNodes(&nodeRoundsOpen);
    } else {
      acrossAllRanks(context, acrossAll);
    }
  } catch (const PeerTookAnotherAlgorithm&) {
    // The node peers that read the round are abandoning it too; a peer that took the other
    // algorithm never will: number the next round alike everywhere.
    for (; nodeRoundsOpen > 0; --nodeRoundsOpen) h->nodeRounds->withdrawSharedRound();
    joinTheirRound(context);
  }
}

}  // namespace

std::size_t halvesNodeRoundBytes(CollectiveKind kind, std::size_t blockBytes, int localSize, int nodes) {
  const std::size_t arrayBytes = static_cast<std::size_t>(localSize) * static_cast<std::size_t>(nodes) * blockBytes;
  // The reduce-scatter's first round (a local rank's whole input) is larger than its second (the
  // summary and the node's L blocks); the all-gather's second carries the summary and the array.
  if (kind == CollectiveKind::kReduceScatter) return std::max(arrayBytes, sizeof(CallSummary) + arrayBytes / nodes);
  return sizeof(CallSummary) + arrayBytes;
}

void recursiveHalvingReduceScatter(AlgorithmContext& context, const Call& call) {
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  const int divisor = call.op == ReduceOp::kAvg ? context.size : 1;
  runHalf(
      context, call, [&](int* open) { reduceScatterThroughLeader(context, call, op, divisor, open); },
      [&](Butterfly& butterfly) { butterfly.reduceScatter(call.send, call.recv, call.count, call.type, op, divisor); });
}

void recursiveDoublingAllgather(AlgorithmContext& context, const Call& call) {
  runHalf(
      context, call, [&](int* open) { allgatherThroughLeader(context, call, open); },
      [&](Butterfly& butterfly) { butterfly.allgather(call.send, call.recv, call.count, call.type); });
}

}  // namespace ringsync::detail
