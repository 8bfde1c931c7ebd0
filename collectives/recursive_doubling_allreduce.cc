#include "recursive_doubling_allreduce.h"

#include <cstring>
#include <string>
#include <vector>

#include "another_algorithm_watch.h"
#include "call_summary.h"
#include "chunk_layout.h"
#include "node_hierarchy.h"
#include "node_leader.h"
#include "recursive_doubling.h"
#include "reduce_kernels.h"
#include "transfer_constants.h"
#include "ringsync/errors.h"
#include "ringsync/options.h"

namespace ringsync::detail {
namespace {

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

void acrossAllRanks(AlgorithmContext& context, const Call& args, ReduceOp op) {
  const std::size_t bytes = args.count * dataTypeSize(args.type);
  CallSummary summary;
  summary.add(context.rank, context.header);
  RecursiveDoubling doubling({context.comm, context.rank, context.size, nullptr}, *context.doublingBuffers, bytes);
  if (bytes > 0) std::memcpy(doubling.payload(), args.send, bytes);
  doubling.run(context.header, summary, args.count, args.type, op, context.deadline);
  raiseOnDisagreement(context, summary);
  if (args.op == ReduceOp::kAvg) divideElements(doubling.payload(), args.count, args.type, context.size);
  if (bytes > 0) std::memcpy(args.recv, doubling.payload(), bytes);
}

// Local rank 0 alone doubles the node's sum among the nodes' leaders, then hands the node the
// result (node_leader.h).
LeaderResult leaderDoubles(AlgorithmContext& context, const Call& args, ReduceOp op, CallSummary& summary,
                           int* roundsOpen) {
  NodeHierarchy& h = *context.hierarchy;
  RoundTransport& node = *h.nodeRounds;
  const std::size_t bytes = args.count * dataTypeSize(args.type);
  RecursiveDoubling doubling({h.crossComm, h.nodeIndex, h.nodes, &h.crossGlobalRanks}, *context.doublingBuffers, bytes);
  const bool nodeAgreed = !summary.disagrees();
  if (nodeAgreed && bytes > 0) {
    node.requirePayloadBytes([bytes](int) { return bytes; });
    // Local ranks in order: every node reduces the same way.
    reduceElements(doubling.payload(), node.payload(0), node.payload(1), args.count, args.type, op);
    for (int r = 2; r < h.localSize; ++r)
      reduceElements(doubling.payload(), doubling.payload(), node.payload(r), args.count, args.type, op);
  }
  PeerNames names(context.deadline);
  names.use(h.crossGlobalRanks);
  doubling.run(context.header, summary, args.count, args.type, op, context.deadline);
  *roundsOpen = 0;  // every node's leader passed its node round: every rank joined this call
  if (!summary.disagrees() && args.op == ReduceOp::kAvg)
    divideElements(doubling.payload(), args.count, args.type, context.size);
  std::byte* result = leaderResultSpace(h, bytes);
  if (!summary.disagrees() && bytes > 0) std::memcpy(result, doubling.payload(), bytes);
  return handResultToNode(context, summary, nodeAgreed, bytes);
}

// `nodeRoundOpen`: the node rounds this rank has begun that a node peer may not have read (taken back
// when a peer took another algorithm).
void nodeThenAcrossNodes(AlgorithmContext& context, const Call& args, ReduceOp op, int* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  RoundTransport& node = *h.nodeRounds;
  const std::size_t elementBytes = dataTypeSize(args.type), bytes = args.count * elementBytes;
  if (bytes > node.maxPayloadBytes())
    throw InvalidArgument("allreduce: recursive doubling across nodes takes at most " +
                          std::to_string(node.maxPayloadBytes()) + " bytes (a node round)");
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  const PayloadPiece whole{args.send, bytes};
  node.begin(context.header, &whole, 1);
  *nodeRoundOpen = 1;
  node.complete(context.deadline);

  CallSummary summary;
  for (int r = 0; r < h.localSize; ++r) summary.add(h.nodeGlobalRanks[static_cast<std::size_t>(r)], node.header(r));
  // Small: the leader alone doubles the whole message (one rank per node on the network, one
  // message per node and step); larger: each local rank its chunk, 1/L of the bytes
  // (kAcrossNodesShardFromBytes). Both end with a second node round.
  const std::size_t localRanks = static_cast<std::size_t>(h.localSize);
  const bool shard = bytes * localRanks >= kAcrossNodesShardFromBytes && args.count >= localRanks;
  if (!shard) {
    const LeaderResult result = h.localRank == 0 ? leaderDoubles(context, args, op, summary, nodeRoundOpen)
                                                 : resultFromLeader(context, summary, bytes, nodeRoundOpen);
    raiseOnDisagreement(context, result.summary);
    if (bytes > 0) std::memcpy(args.recv, result.data, bytes);
    return;
  }
  const ChunkLayout chunks(args.count, h.localSize);
  const ElementRange part = chunks.chunk(h.localRank);
  RecursiveDoubling doubling({h.crossComm, h.nodeIndex, h.nodes, &h.crossGlobalRanks}, *context.doublingBuffers,
                             part.count * elementBytes);
  if (!summary.disagrees() && part.count > 0) {
    node.requirePayloadBytes([bytes](int) { return bytes; });
    // Local ranks in order: every node reduces its part the same way.
    const std::size_t offset = part.begin * elementBytes;
    reduceElements(doubling.payload(), node.payload(0) + offset, node.payload(1) + offset, part.count, args.type, op);
    for (int r = 2; r < h.localSize; ++r)
      reduceElements(doubling.payload(), doubling.payload(), node.payload(r) + offset, part.count, args.type, op);
  }
  names.use(h.crossGlobalRanks);
  doubling.run(context.header, summary, part.count, args.type, op, context.deadline);
  // Every rank passed the node round (the doubling needed every rank's data).
  *nodeRoundOpen = 0;
  raiseOnDisagreement(context, summary);
  if (args.op == ReduceOp::kAvg) divideElements(doubling.payload(), part.count, args.type, context.size);
  names.use(h.nodeGlobalRanks);
  node.run(context.header, doubling.payload(), part.count * elementBytes, context.deadline);
  node.requirePayloadBytes([&](int r) { return chunks.length(r) * elementBytes; });
  for (int r = 0; r < h.localSize; ++r)
    if (chunks.length(r) > 0)
      std::memcpy(at(args.recv, chunks.begin(r), elementBytes), node.payload(r), chunks.length(r) * elementBytes);
}

}  // namespace

void recursiveDoublingAllreduce(AlgorithmContext& context, const Call& args) {
  if (args.scattered != nullptr || context.doublingBuffers == nullptr)
    throw InvalidArgument(
        "allreduce: recursive doubling takes one contiguous buffer and the communicator's doubling buffers");
  // kAvg: sums at every step, one division by every rank at the end (bit-identical everywhere).
  const ReduceOp op = args.op == ReduceOp::kAvg ? ReduceOp::kSum : args.op;
  int nodeRoundsOpen = 0;
  try {
    AnotherAlgorithmWatch watch(context);
    if (context.hierarchy != nullptr) {
      nodeThenAcrossNodes(context, args, op, &nodeRoundsOpen);
    } else {
      acrossAllRanks(context, args, op);
    }
  } catch (const PeerTookAnotherAlgorithm&) {
    // The peers on this node that read the round are abandoning it too; a peer that took the
    // other algorithm never will: number the next round alike everywhere.
    for (; nodeRoundsOpen > 0; --nodeRoundsOpen) context.hierarchy->nodeRounds->withdrawSharedRound();
    joinTheirRound(context);
  }
}

}  // namespace ringsync::detail
