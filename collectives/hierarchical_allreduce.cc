#include "hierarchical_allreduce.h"

#include <algorithm>
#include <string>
#include <vector>

#include "node_hierarchy.h"
#include "reduce_kernels.h"
#include "ring_pipeline.h"
#include "ringsync/errors.h"
#include "split_allreduce.h"

namespace ringsync::detail {
namespace {

// Pieces this large keep the network busy while the node's shared-memory phases of the pieces
// before and after run (measured: bench/multihost.sh, 2 hosts x 2 ranks, 2 Gbit/s). Re-checked
// with the ring's eager-sized segments: 256 KiB-2 MiB level at the cap, 4-8 MiB 4-5% behind;
// uncapped 2 MiB ahead (1 MiB messages: 1043 us against 1222-1653 with smaller pieces).
constexpr std::size_t kPipelinePieceBytes = 2u << 20;

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

Call allreducePiece(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  return Call{CollectiveKind::kAllreduce, send, recv, count, type, op};
}

}  // namespace

void hierarchicalAllreduce(AlgorithmContext& context, const Call& args) {
  if (context.hierarchy == nullptr || args.scattered != nullptr)
    throw InvalidArgument(
        "allreduce: the hierarchical algorithm needs ranks on several nodes with the same number "
        "of ranks on each, and one contiguous buffer");
  NodeHierarchy& h = *context.hierarchy;
  // The one check, a fingerprint round on the whole communicator, where every algorithm starts:
  // every rank sees every rank's call, so a disagreement anywhere (inside a node, between nodes,
  // or a count that put another rank on the direct round below the across-node limit) raises
  // MismatchError (NonFiniteError) on every rank at once, with the ranks of the communicator, and
  // no phase below waits for a peer that will not come. One header round across the nodes, ~1%
  // of a 1 MiB call over 2 Gbit/s.
  fingerprintRound(context);
  // kAvg: sums at both levels, one division by every rank at the end (bit-identical everywhere).
  const ReduceOp op = args.op == ReduceOp::kAvg ? ReduceOp::kSum : args.op;
  const std::size_t elementBytes = dataTypeSize(args.type);
  const std::size_t pieceLimit = std::min(splitPieceElements(h.nodeRounds->maxPayloadBytes(), h.localSize,
                                                             elementBytes),
                                          std::max<std::size_t>(1, kPipelinePieceBytes / elementBytes));
  const std::size_t pieces = args.count == 0 ? 1 : (args.count + pieceLimit - 1) / pieceLimit;
  auto pieceArgs = [&](std::size_t p) {
    const std::size_t begin = p * pieceLimit, length = std::min(pieceLimit, args.count - begin);
    return allreducePiece(at(args.send, begin, elementBytes), at(args.recv, begin, elementBytes), length, args.type,
                          op);
  };
  auto ownArgs = [&](const Call& piece) {
    const SplitChunks chunks(piece.count, h.localSize);
    std::byte* own = at(piece.recv, chunks.begin(h.localRank), elementBytes);
    return allreducePiece(own, own, chunks.length(h.localRank), args.type, op);
  };

  PeerNames names(context.deadline);
  const AlreadyChecked checked;
  AlgorithmContext node{h.nodeComm,   h.localRank,    h.localSize,      *h.nodeRounds, h.nodeScratch,
                        context.ring, context.header, context.deadline, checked};
  AlgorithmContext cross{h.crossComm,    h.nodeIndex,      h.nodes, *h.crossRounds, h.crossScratch,
                         context.ring,  // the across-node segments (options.h), as the hierarchy was built with
                         context.header, context.deadline, checked};
  auto reduceScatterInNode = [&](const Call& piece) {
    names.use(h.nodeGlobalRanks);
    splitScatterRound(node, piece);
    splitReduceOwnChunk(node, piece);
  };
  auto allGatherInNode = [&](const Call& piece) {
    names.use(h.nodeGlobalRanks);
    splitGatherRound(node, piece);
  };

  // Piece p's cross-node ring runs while the node all-gathers piece p-1 and reduce-scatters piece
  // p+1 through shared memory: the network stays busy during the node phases.
  Call current = pieceArgs(0);
  reduceScatterInNode(current);
  Call previous{};
  for (std::size_t p = 0; p < pieces; ++p) {
    const Call own = ownArgs(current);
    names.use(h.crossGlobalRanks);
    RingInProgress ring(cross, own);
    ring.advance();
    if (p > 0) allGatherInNode(previous);
    ring.advance();
    Call next{};
    if (p + 1 < pieces) {
      next = pieceArgs(p + 1);
      reduceScatterInNode(next);
    }
    names.use(h.crossGlobalRanks);
    ring.finish();
    if (args.op == ReduceOp::kAvg) divideElements(own.recv, own.count, args.type, context.size);
    previous = current;
    current = next;
  }
  allGatherInNode(previous);
}

}  // namespace ringsync::detail
