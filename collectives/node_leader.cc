#include "node_leader.h"

#include <cstring>
#include <string>

#include "recursive_doubling.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

// The summaries among the ranks of this local rank, one per node: `summary` (the node's calls)
// ends as every node's.
void crossWithVerdict(AlgorithmContext& context, CallSummary& summary) {
  NodeHierarchy& h = *context.hierarchy;
  PeerNames names(context.deadline);
  names.use(h.crossGlobalRanks);
  RecursiveDoubling verdict({h.crossComm, h.nodeIndex, h.nodes, &h.crossGlobalRanks}, *context.doublingBuffers, 0);
  verdict.run(context.header, summary, 0, DataType::kUInt8, ReduceOp::kSum, context.deadline);
}

[[noreturn]] void leaderSentNoResult(const AlgorithmContext& context, std::size_t got, std::size_t expected) {
  const NodeHierarchy& h = *context.hierarchy;
  throw MismatchError(describeCall(context.header) + ": the node's leader (rank " +
                      std::to_string(h.nodeGlobalRanks[0]) + ") sent " + std::to_string(got) +
                      " bytes of result, expected " + std::to_string(expected) + " (ranks disagree)");
}

}  // namespace

std::byte* leaderResultSpace(NodeHierarchy& h, std::size_t bytes, std::size_t workBytes) {
  h.crossScratch.reserve(sizeof(CallSummary) + bytes + workBytes);
  return h.crossScratch.data() + sizeof(CallSummary);
}

LeaderResult handResultToNode(AlgorithmContext& context, const CallSummary& summary, bool nodeAgreed,
                              std::size_t bytes) {
  NodeHierarchy& h = *context.hierarchy;
  std::byte* out = h.crossScratch.data();
  if (!nodeAgreed) return {summary, out + sizeof summary};
  std::memcpy(out, &summary, sizeof summary);
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  h.nodeRounds->run(context.header, out, sizeof summary + (summary.disagrees() ? 0 : bytes), context.deadline);
  return {summary, out + sizeof summary};
}

LeaderResult resultFromLeader(AlgorithmContext& context, const CallSummary& nodeSummary, std::size_t bytes,
                              int* roundsOpen) {
  LeaderResult result{nodeSummary, nullptr};
  if (nodeSummary.disagrees()) {  // the call's first round still open: the leader may abandon it
    crossWithVerdict(context, result.summary);
    *roundsOpen = 0;
    return result;
  }
  NodeHierarchy& h = *context.hierarchy;
  RoundTransport& round = *h.nodeRounds;
  {
    PeerNames names(context.deadline);
    names.use(h.nodeGlobalRanks);
    round.begin(context.header, nullptr, 0);
    *roundsOpen = 2;
    round.complete(context.deadline);
    *roundsOpen = 0;
  }
  const std::size_t got = round.payloadBytes(0);
  if (got < sizeof(CallSummary)) leaderSentNoResult(context, 0, bytes);
  CallSummary leaders;
  std::memcpy(&leaders, round.payload(0), sizeof leaders);
  if (leaders.disagrees()) {  // the verdict, met again with every node's local rank like this one
    crossWithVerdict(context, result.summary);
    return result;
  }
  if (got != sizeof(CallSummary) + bytes) leaderSentNoResult(context, got - sizeof(CallSummary), bytes);
  return {leaders, round.payload(0) + sizeof(CallSummary)};
}

}  // namespace ringsync::detail
