#include "recursive_halving_blockwise.h"

#include <cstring>
#include <string>
#include <vector>

#include "another_algorithm_watch.h"
#include "block_groups.h"
#include "butterfly.h"
#include "node_hierarchy.h"
#include "reduce_kernels.h"
#include "transfer_constants.h"

namespace ringsync::detail {
namespace {

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

// Runs one butterfly; a failure that left sends or receives in flight in the working copy leaves
// that memory to MPI (a late message would otherwise read or land in a later call's data).
template <typename Fn> void guardWork(Butterfly& butterfly, ScratchBuffer& work, Fn&& fn) {
  try {
    fn();
  } catch (...) {
    if (butterfly.workLeftToMpi()) work.abandon();
    throw;
  }
}

// One butterfly across all ranks.
template <typename Fn> void acrossAllRanks(AlgorithmContext& context, Fn&& run) {
  CallSummary summary;
  summary.add(context.rank, context.header);
  Butterfly butterfly({context.comm, context.rank, context.size, nullptr}, *context.doublingBuffers,
                      *context.pieceScratch, context.header, summary, context.deadline);
  guardWork(butterfly, *context.pieceScratch, [&] { run(butterfly); });
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

// Reduce-scatter across nodes: the node round hands each local peer m the N blocks of its group
// (block_groups.h), so that this rank sums its own group's N blocks over the node, in local-rank
// order; the butterfly among local rank m of every node then reduce-scatters those node sums.
void reduceScatterAcrossNodes(AlgorithmContext& context, const Call& call, ReduceOp op, int divisor,
                              bool* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const BlockGroups groups(h);
  const int L = h.localSize, N = h.nodes, me = h.localRank;
  const std::size_t es = call.elementBytes(), blockBytes = call.blockBytes();
  std::vector<PayloadPiece> pieces;
  pieces.reserve(static_cast<std::size_t>((L - 1) * N));
  for (int m = 0; m < L; ++m)
    if (m != me)
      for (int j = 0; j < N; ++j)
        pieces.push_back({at(call.send, static_cast<std::size_t>(groups.block(m, j)) * call.count, es), blockBytes});
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  RoundTransport& round = *h.nodeRounds;
  round.begin(context.header, pieces.data(), pieces.size());
  *nodeRoundOpen = true;
  round.complete(context.deadline);
  CallSummary summary = nodeSummary(h);
  Butterfly butterfly = crossButterfly(context, summary);
  // The node sums, outside the butterfly's working copy (it copies its input there first); the
  // cross-node scratch, as no ring runs across the nodes in this call.
  ScratchBuffer& nodeSums = h.crossScratch;
  nodeSums.reserve(static_cast<std::size_t>(N) * blockBytes);
  if (!summary.disagrees()) {
    const std::size_t peerBytes = static_cast<std::size_t>((L - 1) * N) * blockBytes;
    round.requirePayloadBytes([&](int) { return peerBytes; });
    for (int j = 0; j < N; ++j) {
      std::byte* target = nodeSums.data() + static_cast<std::size_t>(j) * blockBytes;
      auto contribution = [&](int m) -> const void* {
        if (m == me) return at(call.send, static_cast<std::size_t>(groups.block(me, j)) * call.count, es);
        // m's payload skips m's own group: this rank's group is its (me - (me > m)) -th.
        const auto slot = static_cast<std::size_t>((me - (me > m ? 1 : 0)) * N + j);
        return round.payload(m) + slot * blockBytes;
      };
      reduceElements(target, contribution(0), contribution(1), call.count, call.type, op);
      for (int m = 2; m < L; ++m) reduceElements(target, target, contribution(m), call.count, call.type, op);
    }
  }
  names.use(h.crossGlobalRanks);
  guardWork(butterfly, *context.pieceScratch,
            [&] { butterfly.reduceScatter(nodeSums.data(), call.recv, call.count, call.type, op, divisor); });
  *nodeRoundOpen = false;  // every rank passed its node round: the butterfly carried every rank's call
  raiseOnDisagreement(context, summary);
}

// All-gather across nodes. Small (allgatherHalvesShard false): the node round hands every local
// rank the node's L blocks, and every local rank gathers all N nodes' blocks in its butterfly (no
// second node round, L times the bytes across). Sharded: each local rank gathers only its group
// (its block of every node) across, then a second node round spreads the groups.
void allgatherAcrossNodes(AlgorithmContext& context, const Call& call, bool* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const BlockGroups groups(h);
  const int L = h.localSize, N = h.nodes;
  const std::size_t es = call.elementBytes(), blockBytes = call.blockBytes();
  const bool shard = allgatherHalvesShard(blockBytes, L);
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  RoundTransport& round = *h.nodeRounds;
  const PayloadPiece own{call.send, shard ? 0 : blockBytes};
  round.begin(context.header, &own, 1);
  *nodeRoundOpen = true;
  round.complete(context.deadline);
  CallSummary summary = nodeSummary(h);
  Butterfly butterfly = crossButterfly(context, summary);
  // [input: what this rank sends across | output: what the butterfly gathers], outside its work.
  const std::size_t inputBytes = shard ? blockBytes : static_cast<std::size_t>(L) * blockBytes;
  ScratchBuffer& staging = h.crossScratch;
  staging.reserve(inputBytes * static_cast<std::size_t>(N + 1));
  std::byte* input = staging.data();
  std::byte* gathered = input + inputBytes;
  if (shard) {
    if (blockBytes > 0) std::memcpy(input, call.send, blockBytes);
  } else if (!summary.disagrees()) {
    round.requirePayloadBytes([&](int) { return blockBytes; });
    for (int m = 0; m < L; ++m)
      if (blockBytes > 0) std::memcpy(input + static_cast<std::size_t>(m) * blockBytes, round.payload(m), blockBytes);
  }
  names.use(h.crossGlobalRanks);
  const std::size_t elements = shard ? call.count : static_cast<std::size_t>(L) * call.count;
  guardWork(butterfly, *context.pieceScratch, [&] { butterfly.allgather(input, gathered, elements, call.type); });
  *nodeRoundOpen = false;
  raiseOnDisagreement(context, summary);
  // gathered: member j's input, j = 0 .. N-1 (node j of this rank's cross communicator).
  if (!shard) {
    for (int j = 0; j < N; ++j)
      for (int m = 0; m < L; ++m)
        if (blockBytes > 0)
          std::memcpy(at(call.recv, static_cast<std::size_t>(groups.block(m, j)) * call.count, es),
                      gathered + (static_cast<std::size_t>(j) * L + m) * blockBytes, blockBytes);
    return;
  }
  names.use(h.nodeGlobalRanks);
  const std::size_t groupBytes = static_cast<std::size_t>(N) * blockBytes;
  round.run(context.header, gathered, groupBytes, context.deadline);
  round.requirePayloadBytes([&](int) { return groupBytes; });
  for (int m = 0; m < L; ++m)
    for (int j = 0; j < N; ++j)
      if (blockBytes > 0)
        std::memcpy(at(call.recv, static_cast<std::size_t>(groups.block(m, j)) * call.count, es),
                    round.payload(m) + static_cast<std::size_t>(j) * blockBytes, blockBytes);
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
  bool nodeRoundOpen = false;
  try {
    AnotherAlgorithmWatch watch(context);
    if (throughNodes) {
      acrossNodes(&nodeRoundOpen);
    } else {
      acrossAllRanks(context, acrossAll);
    }
  } catch (const PeerTookAnotherAlgorithm&) {
    // The node peers that read the round are abandoning it too; a peer that took the other
    // algorithm never will: number the next round alike everywhere.
    if (nodeRoundOpen) h->nodeRounds->withdrawSharedRound();
    joinTheirRound(context);
  }
}

}  // namespace

bool allgatherHalvesShard(std::size_t blockBytes, int localSize) {
  const auto ranks = static_cast<std::size_t>(localSize);
  return ranks * ranks * blockBytes >= kAcrossNodesShardFromBytes;
}

std::size_t halvesNodeRoundBytes(CollectiveKind kind, std::size_t blockBytes, int localSize, int nodes) {
  const auto L = static_cast<std::size_t>(localSize), N = static_cast<std::size_t>(nodes);
  if (kind == CollectiveKind::kReduceScatter) return (L - 1) * N * blockBytes;
  return allgatherHalvesShard(blockBytes, localSize) ? N * blockBytes : blockBytes;
}

void recursiveHalvingReduceScatter(AlgorithmContext& context, const Call& call) {
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  const int divisor = call.op == ReduceOp::kAvg ? context.size : 1;
  runHalf(
      context, call, [&](bool* open) { reduceScatterAcrossNodes(context, call, op, divisor, open); },
      [&](Butterfly& butterfly) { butterfly.reduceScatter(call.send, call.recv, call.count, call.type, op, divisor); });
}

void recursiveDoublingAllgather(AlgorithmContext& context, const Call& call) {
  runHalf(
      context, call, [&](bool* open) { allgatherAcrossNodes(context, call, open); },
      [&](Butterfly& butterfly) { butterfly.allgather(call.send, call.recv, call.count, call.type); });
}

}  // namespace ringsync::detail
