#include "split_allreduce.h"

#include <algorithm>

#include "round_halves.h"

namespace ringsync::detail {
namespace {

// Elements [origin, origin + n) of a larger array (a ScatteredBuffer or a ContiguousView), seen as
// an array of its own: index i here is index origin + i there. One piece of a long all-reduce.
template <typename View> class PieceOf {
 public:
  PieceOf(const View& whole, std::size_t origin) : whole_(whole), origin_(origin) {}
  template <typename Fn> void forEach(std::size_t begin, std::size_t length, Fn&& fn) const {
    whole_.forEach(origin_ + begin, length,
                   [&](std::byte* data, std::size_t index, std::size_t run) { fn(data, index - origin_, run); });
  }
  std::pair<const PayloadPiece*, std::size_t> pieces(std::size_t begin1, std::size_t length1, std::size_t begin2,
                                                     std::size_t length2) const {
    return piecesOf(whole_, origin_ + begin1, length1, origin_ + begin2, length2);
  }

 private:
  const View& whole_;
  std::size_t origin_;
};

template <typename View> std::pair<const PayloadPiece*, std::size_t> piecesOf(const PieceOf<View>& piece,
                                                                              std::size_t begin1, std::size_t length1,
                                                                              std::size_t begin2, std::size_t length2) {
  return piece.pieces(begin1, length1, begin2, length2);
}

// The reduce-scatter round into `out`'s own chunk, then the all-gather round out of it, over
// `count` elements. `first`: this is the call's first round, where the check runs.
template <typename In, typename Out> void splitOver(AlgorithmContext& context, std::size_t count, DataType type,
                                                    ReduceOp op, const In& in, const Out& out, bool first) {
  const ChunkLayout chunks(count, context.size);
  scatterRound(context, chunks, in);
  if (first) firstRoundDone(context);
  reduceOwnChunk(context, chunks, type, op, in, out);
  gatherRound(context, chunks, dataTypeSize(type), out, out, false);
}

// The whole array in pieces of at most one round's worth, one after the other (one piece when it
// fits: the split all-reduce as it always was).
template <typename In, typename Out>
void splitInPieces(AlgorithmContext& context, const Call& args, const In& in, const Out& out) {
  const std::size_t limit = splitPieceElements(context.rounds.maxPayloadBytes(), context.size, args.elementBytes());
  if (args.count <= limit) return splitOver(context, args.count, args.type, args.op, in, out, true);
  for (std::size_t begin = 0; begin < args.count; begin += limit)
    splitOver(context, std::min(limit, args.count - begin), args.type, args.op, PieceOf<In>(in, begin),
              PieceOf<Out>(out, begin), begin == 0);
}

ContiguousView inputOf(const Call& args) { return ContiguousView(args.send, args.elementBytes()); }
ContiguousView outputOf(const Call& args) { return ContiguousView(args.recv, args.elementBytes()); }

}  // namespace

std::size_t splitPieceElements(std::size_t roundPayloadBytes, int ranks, std::size_t elementBytes) {
  const std::size_t capacity = roundPayloadBytes / elementBytes, n = static_cast<std::size_t>(ranks);
  if (n < 2) return std::max<std::size_t>(1, capacity);
  std::size_t piece = capacity * n / (n - 1);
  while (piece > 1 && SplitChunks(piece, ranks).largestGather() > capacity) --piece;
  return std::max<std::size_t>(1, piece);
}

void splitAllreduce(AlgorithmContext& context, const Call& args) {
  if (args.scattered != nullptr) return splitInPieces(context, args, *args.scattered, *args.scattered);
  splitInPieces(context, args, inputOf(args), outputOf(args));
}

void splitScatterRound(AlgorithmContext& context, const Call& args) {
  scatterRound(context, ChunkLayout(args.count, context.size), inputOf(args));
}
void splitReduceOwnChunk(AlgorithmContext& context, const Call& args) {
  reduceOwnChunk(context, ChunkLayout(args.count, context.size), args.type, args.op, inputOf(args), outputOf(args));
}
void splitGatherRound(AlgorithmContext& context, const Call& args) {
  const ContiguousView out = outputOf(args);
  gatherRound(context, ChunkLayout(args.count, context.size), args.elementBytes(), out, out, false);
}

}  // namespace ringsync::detail
