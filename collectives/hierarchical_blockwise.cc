#include "hierarchical_blockwise.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "block_groups.h"
#include "node_hierarchy.h"
#include "reduce_kernels.h"
#include "ring_pipeline.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

// A piece's whole array (n blocks' slices) at most this large: the same pipelining grain as the
// hierarchical all-reduce's pieces.
constexpr std::size_t kPipelinePieceBytes = 2u << 20;

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

// What every rank needs to walk the pieces of one call alike.
struct PieceWalk {
  const NodeHierarchy& h;
  BlockGroups groups;
  std::size_t elementBytes;
  std::size_t blockCount;  // elements per block (the call's count)
  std::size_t piece;       // elements of each block per piece
  std::size_t pieces;
  std::byte* buffers[2];  // double-buffered cross-node data of one piece: h.nodes · piece elements

  PieceWalk(AlgorithmContext& context, const Call& call, std::size_t payloadBlocks)
      : h(*context.hierarchy), groups(*context.hierarchy), elementBytes(call.elementBytes()), blockCount(call.count) {
    // The node round carries `payloadBlocks` slices of a piece per rank.
    const std::size_t roundLimit = h.nodeRounds->maxPayloadBytes() / (payloadBlocks * elementBytes);
    const std::size_t pipeLimit = kPipelinePieceBytes / (static_cast<std::size_t>(context.size) * elementBytes);
    piece = std::max<std::size_t>(1, std::min(roundLimit, pipeLimit));
    pieces = blockCount == 0 ? 0 : (blockCount + piece - 1) / piece;
    const std::size_t bufferBytes = static_cast<std::size_t>(h.nodes) * std::min(piece, blockCount) * elementBytes;
    context.pieceScratch->reserve(2 * bufferBytes);
    buffers[0] = context.pieceScratch->data();
    buffers[1] = buffers[0] + bufferBytes;
  }
  std::size_t begin(std::size_t p) const { return p * piece; }
  std::size_t length(std::size_t p) const { return std::min(piece, blockCount - begin(p)); }
};

AlgorithmContext crossContext(AlgorithmContext& context, const AlreadyChecked& checked) {
  NodeHierarchy& h = *context.hierarchy;
  AlgorithmContext cross{h.crossComm,  h.nodeIndex,    h.nodes,          *h.crossRounds, h.crossScratch,
                         context.ring, context.header, context.deadline, checked};
  cross.ringPartials = context.ringPartials;  // the whole communicator runs no ring of its own meanwhile
  return cross;
}

// Reduce-scatter, step 1 for piece p: every local peer's slices of this rank's group, summed into
// `out` (the group's node sums, in cross-node order).
void reduceGroupInNode(AlgorithmContext& context, const Call& call, const PieceWalk& w, std::size_t p, ReduceOp op,
                       std::byte* out) {
  const NodeHierarchy& h = w.h;
  const int L = h.localSize, N = h.nodes, me = h.localRank;
  const std::size_t begin = w.begin(p), length = w.length(p), es = w.elementBytes;
  std::vector<PayloadPiece> pieces;
  pieces.reserve(static_cast<std::size_t>((L - 1) * N));
  for (int m = 0; m < L; ++m) {
    if (m == me) continue;
    for (int j = 0; j < N; ++j)
      pieces.push_back(
          {at(call.send, static_cast<std::size_t>(w.groups.block(m, j)) * w.blockCount + begin, es), length * es});
  }
  RoundTransport& round = *h.nodeRounds;
  round.begin(context.header, pieces.data(), pieces.size());
  round.complete(context.deadline);
  const std::size_t peerBytes = static_cast<std::size_t>((L - 1) * N) * length * es;
  round.requirePayloadBytes([&](int) { return peerBytes; });
  for (int j = 0; j < N; ++j) {
    std::byte* target = out + static_cast<std::size_t>(j) * length * es;
    const void* acc = at(call.send, static_cast<std::size_t>(w.groups.block(me, j)) * w.blockCount + begin, es);
    for (int m = 0; m < L; ++m) {
      if (m == me) continue;
      const std::size_t slot = static_cast<std::size_t>((me - (me > m ? 1 : 0)) * N +
                                                        j);  // m's payload skips m's group
      reduceElements(target, acc, round.payload(m) + slot * length * es, length, call.type, op);
      acc = target;
    }
  }
}

// All-gather, step 2 for piece p: this rank's gathered group out to the node, every group in.
void spreadGroupsInNode(AlgorithmContext& context, const Call& call, const PieceWalk& w, std::size_t p,
                        const std::byte* gathered) {
  const NodeHierarchy& h = w.h;
  const int N = h.nodes;
  const std::size_t begin = w.begin(p), length = w.length(p), es = w.elementBytes;
  RoundTransport& round = *h.nodeRounds;
  const PayloadPiece mine{gathered, static_cast<std::size_t>(N) * length * es};
  round.begin(context.header, &mine, 1);
  round.complete(context.deadline);
  round.requirePayloadBytes([&](int) { return mine.bytes; });
  for (int m = 0; m < h.localSize; ++m)
    for (int j = 0; j < N; ++j)
      std::memcpy(at(call.recv, static_cast<std::size_t>(w.groups.block(m, j)) * w.blockCount + begin, es),
                  round.payload(m) + static_cast<std::size_t>(j) * length * es, length * es);
}

void requireHierarchy(const AlgorithmContext& context, const Call& call) {
  if (context.hierarchy == nullptr || context.pieceScratch == nullptr)
    throw InvalidArgument(std::string(collectiveName(call.kind)) +
                          ": the hierarchical algorithm needs ranks on several nodes with the same number of ranks "
                          "on each");
}

}  // namespace

void hierarchicalReduceScatter(AlgorithmContext& context, const Call& call) {
  requireHierarchy(context, call);
  fingerprintRound(context);  // the one check, on the whole communicator (see the header)
  NodeHierarchy& h = *context.hierarchy;
  const PieceWalk w(context, call, static_cast<std::size_t>((h.localSize - 1) * h.nodes));
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  PeerNames names(context.deadline);
  const AlreadyChecked checked;
  AlgorithmContext cross = crossContext(context, checked);
  if (w.pieces > 0) {
    names.use(h.nodeGlobalRanks);
    reduceGroupInNode(context, call, w, 0, op, w.buffers[0]);
  }
  // Piece p's cross-node ring runs while the node sums piece p+1 through shared memory.
  for (std::size_t p = 0; p < w.pieces; ++p) {
    std::byte* own = at(call.recv, w.begin(p), w.elementBytes);
    names.use(h.crossGlobalRanks);
    RingInProgress ring(cross, Call{CollectiveKind::kReduceScatter, w.buffers[p % 2], own, w.length(p), call.type, op});
    ring.advance();
    if (p + 1 < w.pieces) {
      names.use(h.nodeGlobalRanks);
      reduceGroupInNode(context, call, w, p + 1, op, w.buffers[(p + 1) % 2]);
    }
    names.use(h.crossGlobalRanks);
    ring.finish();
    if (call.op == ReduceOp::kAvg) divideElements(own, w.length(p), call.type, context.size);
  }
}

void hierarchicalAllgather(AlgorithmContext& context, const Call& call) {
  requireHierarchy(context, call);
  fingerprintRound(context);
  NodeHierarchy& h = *context.hierarchy;
  const PieceWalk w(context, call, static_cast<std::size_t>(h.nodes));
  PeerNames names(context.deadline);
  const AlreadyChecked checked;
  AlgorithmContext cross = crossContext(context, checked);
  auto gatherAcross = [&](std::size_t p) {
    names.use(h.crossGlobalRanks);
    const Call piece{CollectiveKind::kAllgather, at(call.send, w.begin(p), w.elementBytes), w.buffers[p % 2],
                     w.length(p), call.type};
    return std::make_unique<RingInProgress>(cross, piece);
  };
  // Piece p+1's cross-node ring runs while the node spreads piece p through shared memory.
  std::unique_ptr<RingInProgress> next = w.pieces > 0 ? gatherAcross(0) : nullptr;
  for (std::size_t p = 0; p < w.pieces; ++p) {
    names.use(h.crossGlobalRanks);
    next->finish();
    std::unique_ptr<RingInProgress> current = std::move(next);
    if (p + 1 < w.pieces) {
      next = gatherAcross(p + 1);
      next->advance();
    }
    names.use(h.nodeGlobalRanks);
    spreadGroupsInNode(context, call, w, p, w.buffers[p % 2]);
  }
}

}  // namespace ringsync::detail
