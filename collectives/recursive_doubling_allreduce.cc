#include "recursive_doubling_allreduce.h"

#include <cstring>
#include <string>
#include <vector>

#include "another_algorithm_watch.h"
#include "call_summary.h"
#include "chunk_layout.h"
#include "node_hierarchy.h"
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

// `nodeRoundOpen` is set while this rank's first node round may be unread by a node peer.
void nodeThenAcrossNodes(AlgorithmContext& context, const Call& args, ReduceOp op, bool* nodeRoundOpen) {
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
  *nodeRoundOpen = true;
  node.complete(context.deadline);

  CallSummary summary;
  for (int r = 0; r < h.localSize; ++r) summary.add(h.nodeGlobalRanks[static_cast<std::size_t>(r)], node.header(r));
  // Small: every local rank reduces and sends the whole message (no second node round); larger:
  // each its chunk, 1/L of the bytes over the network (kAcrossNodesShardFromBytes).
  const std::size_t localRanks = static_cast<std::size_t>(h.localSize);
  const bool shard = bytes * localRanks >= kAcrossNodesShardFromBytes && args.count >= localRanks;
  const ChunkLayout chunks(args.count, h.localSize);
  const ElementRange part = shard ? chunks.chunk(h.localRank) : ElementRange{0, args.count};
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
  *nodeRoundOpen = false;
  raiseOnDisagreement(context, summary);
  if (args.op == ReduceOp::kAvg) divideElements(doubling.payload(), part.count, args.type, context.size);
  if (!shard) {
    if (bytes > 0) std::memcpy(args.recv, doubling.payload(), bytes);
    return;
  }
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
  bool nodeRoundOpen = false;
  try {
    AnotherAlgorithmWatch watch(context);
    if (context.hierarchy != nullptr) {
      nodeThenAcrossNodes(context, args, op, &nodeRoundOpen);
    } else {
      acrossAllRanks(context, args, op);
    }
  } catch (const PeerTookAnotherAlgorithm&) {
    // The peers on this node that read the round are abandoning it too; a peer that took the
    // other algorithm never will: number the next round alike everywhere.
    if (nodeRoundOpen) context.hierarchy->nodeRounds->withdrawSharedRound();
    joinTheirRound(context);
  }
}

}  // namespace ringsync::detail
