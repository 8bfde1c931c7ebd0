#include "rabenseifner_allreduce.h"

#include <algorithm>
#include <string>

#include "another_algorithm_watch.h"
#include "butterfly.h"
#include "node_hierarchy.h"
#include "round_halves.h"
#include "split_allreduce.h"

namespace ringsync::detail {
namespace {

std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}

// Across all ranks, a long array goes in pieces, one butterfly each, one after the other. One
// butterfly over the whole array fell behind the pipelined ring from 4 MiB at 8 simulated hosts x 1
// rank (1 Gbit/s; 62-73 against 61 ms at 4 MiB, 292-327 against 250 ms at 16 MiB) and from 8 MiB
// at 4 hosts; in pieces of 0.5-1 MiB it is at the link at every size, level with the ring (bench/
// RESULTS.md section 16.18). A piece is as long as kPieceLatencies times its 2 log2 N latencies'
// bytes, so that they cost at most 1/kPieceLatencies of its time: 1.0 MB at N = 8 with the default
// latency (1,672 B), ~27 MB at N = 8 on a 100 Gbit/s network whose latency is ~44 KiB.
constexpr std::size_t kPieceLatencies = 100;

std::size_t butterflyPieceElements(const AlgorithmContext& context, std::size_t count, std::size_t elementBytes) {
  if (context.networkLatencyBytes == 0) return std::max<std::size_t>(1, count);
  std::size_t steps = 0;
  for (int p = 2; p <= context.size; p *= 2) steps += 2;
  return std::max<std::size_t>(1, kPieceLatencies * steps * context.networkLatencyBytes / elementBytes);
}

void acrossAllRanks(AlgorithmContext& context, const Call& args, ReduceOp op, int divisor) {
  const std::size_t elementBytes = dataTypeSize(args.type);
  const std::size_t pieceLimit = butterflyPieceElements(context, args.count, elementBytes);
  // The first piece checks the call (every piece carries the same header); an empty message still
  // exchanges the summaries. Nothing is written into recv before that check.
  for (std::size_t begin = 0; begin == 0 || begin < args.count; begin += pieceLimit) {
    const std::size_t length = std::min(pieceLimit, args.count - begin);
    CallSummary summary;
    summary.add(context.rank, context.header);
    Butterfly butterfly({context.comm, context.rank, context.size, nullptr}, *context.doublingBuffers,
                        *context.pieceScratch, context.header, summary, context.deadline);
    butterfly.guarded([&] {
      butterfly.allreduce(at(args.send, begin, elementBytes), at(args.recv, begin, elementBytes), length, args.type, op,
                          divisor);
    });
    raiseOnDisagreement(context, summary);
  }
}

// One piece: the node's reduce-scatter round, the butterfly across nodes over this rank's chunk
// (summing into the working copy, never into recv before the call is checked), the node's
// all-gather round. `nodeRoundOpen` is set while this rank's node round may be unread by a peer.
void pieceAcrossNodes(AlgorithmContext& context, AlgorithmContext& node, const Call& piece, ReduceOp op, int divisor,
                      bool* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const std::size_t elementBytes = dataTypeSize(piece.type);
  const ChunkLayout chunks(piece.count, h.localSize);
  const ElementRange own = chunks.chunk(h.localRank);
  const ContiguousView in(piece.send, elementBytes), out(piece.recv, elementBytes);
  PeerNames names(context.deadline);
  names.use(h.nodeGlobalRanks);
  // scatterRound's two halves, open in between: a wait may end in PeerTookAnotherAlgorithm while a
  // node peer reads (or has read) this round, which every rank of the node then takes back.
  auto [pieces, pieceCount] = piecesOf(in, 0, own.begin, own.begin + own.count, piece.count - own.begin - own.count);
  node.rounds.begin(context.header, pieces, pieceCount);
  *nodeRoundOpen = true;
  node.rounds.complete(context.deadline);
  CallSummary summary;
  for (int r = 0; r < h.localSize; ++r)
    summary.add(h.nodeGlobalRanks[static_cast<std::size_t>(r)], node.rounds.header(r));
  Butterfly butterfly({h.crossComm, h.nodeIndex, h.nodes, &h.crossGlobalRanks}, *context.doublingBuffers,
                      *context.pieceScratch, context.header, summary, context.deadline);
  std::byte* work = butterfly.work(own.count * elementBytes);
  // Local ranks in order: every node sums its chunks the same way.
  if (!summary.disagrees())
    reduceOwnChunk(node, chunks, piece.type, op, in, ContiguousView(work, elementBytes, own.begin));
  names.use(h.crossGlobalRanks);
  butterfly.guarded(
      [&] { butterfly.allreduce(work, at(piece.recv, own.begin, elementBytes), own.count, piece.type, op, divisor); });
  *nodeRoundOpen = false;  // every rank passed its node round: the butterfly carried every rank's call
  raiseOnDisagreement(context, summary);
  names.use(h.nodeGlobalRanks);
  gatherRound(node, chunks, elementBytes, out, out, false);
}

void nodesThenAcrossNodes(AlgorithmContext& context, const Call& args, ReduceOp op, int divisor, bool* nodeRoundOpen) {
  NodeHierarchy& h = *context.hierarchy;
  const AlreadyChecked checked;  // the node rounds' fingerprints go into the butterfly's summary
  AlgorithmContext node{h.nodeComm,   h.localRank,    h.localSize,      *h.nodeRounds, h.nodeScratch,
                        context.ring, context.header, context.deadline, checked};
  const std::size_t elementBytes = dataTypeSize(args.type),
                    pieceLimit = splitPieceElements(h.nodeRounds->maxPayloadBytes(), h.localSize, elementBytes);
  // The first piece checks the call; an empty message still exchanges the summaries.
  for (std::size_t begin = 0; begin == 0 || begin < args.count; begin += pieceLimit) {
    const std::size_t length = std::min(pieceLimit, args.count - begin);
    const Call piece{CollectiveKind::kAllreduce,
                     at(args.send, begin, elementBytes),
                     at(args.recv, begin, elementBytes),
                     length,
                     args.type,
                     op};
    pieceAcrossNodes(context, node, piece, op, divisor, nodeRoundOpen);
  }
}

}  // namespace

void rabenseifnerAllreduce(AlgorithmContext& context, const Call& args) {
  if (args.scattered != nullptr || context.doublingBuffers == nullptr || context.pieceScratch == nullptr)
    throw InvalidArgument(
        "allreduce: Rabenseifner's algorithm takes one contiguous buffer and the communicator's "
        "doubling buffers and working memory");
  // kAvg: sums at every step, one division by every rank, by the owner of each chunk.
  const ReduceOp op = args.op == ReduceOp::kAvg ? ReduceOp::kSum : args.op;
  const int divisor = args.op == ReduceOp::kAvg ? context.size : 1;
  bool nodeRoundOpen = false;
  try {
    AnotherAlgorithmWatch watch(context);
    if (context.hierarchy != nullptr) {
      nodesThenAcrossNodes(context, args, op, divisor, &nodeRoundOpen);
    } else {
      acrossAllRanks(context, args, op, divisor);
    }
  } catch (const PeerTookAnotherAlgorithm&) {
    // The node peers that read the round are abandoning it too; a peer that took the other
    // algorithm never will: number the next round alike everywhere.
    if (nodeRoundOpen) context.hierarchy->nodeRounds->withdrawSharedRound();
    joinTheirRound(context);
  }
}

}  // namespace ringsync::detail
