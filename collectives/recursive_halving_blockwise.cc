#include "recursive_halving_blockwise.h"

#include <cstring>
#include <string>
#include <vector>

#include "another_algorithm_watch.h"
#include "block_groups.h"
#include "butterfly.h"
#include "node_hierarchy.h"
#include "reduce_kernels.h"

namespace ringsync::detail {
namespace {

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
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
  butterfly.guarded([&] { butterfly.reduceScatter(nodeSums.data(), call.recv, call.count, call.type, op, divisor); });
  *nodeRoundOpen = false;  // every rank passed its node round: the butterfly carried every rank's call
  raiseOnDisagreement(context, summary);
}

// All-gather across nodes: the node round carries only the calls (for the butterfly's summary);
// each local rank gathers its group (its block of every node) across the nodes, then a second node
// round spreads the groups. (Sending the node's L blocks across from every local rank instead, with
// no second round, was slower at every size measured: 32.0 against 24.5 us at 4 KiB on 2 hosts x 2
// ranks at 2 Gbit/s, 70.8 against 36.1 at 16 KiB; bench/RESULTS.md section 16.16.)
void allgatherAcrossNodes(AlgorithmContext& context, const Call& call, bool* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const BlockGroups groups(h);
  const int L = h.localSize, N = h.nodes;
  const std::size_t es = call.elementBytes(), blockBytes = call.blockBytes();
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  RoundTransport& round = *h.nodeRounds;
  round.begin(context.header, nullptr, 0);
  *nodeRoundOpen = true;
  round.complete(context.deadline);
  CallSummary summary = nodeSummary(h);
  Butterfly butterfly = crossButterfly(context, summary);
  // What the butterfly gathers, outside its working copy: the cross-node scratch, as no ring runs
  // across the nodes in this call.
  const std::size_t groupBytes = static_cast<std::size_t>(N) * blockBytes;
  ScratchBuffer& gathered = h.crossScratch;
  gathered.reserve(groupBytes);
  names.use(h.crossGlobalRanks);
  butterfly.guarded([&] { butterfly.allgather(call.send, gathered.data(), call.count, call.type); });
  *nodeRoundOpen = false;  // every rank passed its node round: the butterfly carried every rank's call
  raiseOnDisagreement(context, summary);
  names.use(h.nodeGlobalRanks);
  round.run(context.header, gathered.data(), groupBytes, context.deadline);
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

std::size_t halvesNodeRoundBytes(CollectiveKind kind, std::size_t blockBytes, int localSize, int nodes) {
  const auto L = static_cast<std::size_t>(localSize), N = static_cast<std::size_t>(nodes);
  if (kind == CollectiveKind::kReduceScatter) return (L - 1) * N * blockBytes;
  return N * blockBytes;
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
