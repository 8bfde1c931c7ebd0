#include "split_allreduce.h"

#include <array>
#include <cstring>

#include "reduce_kernels.h"
#include "scattered_buffer.h"

namespace ringsync::detail {

namespace {
const std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<const std::byte*>(base) + elements * elementBytes;
}

// A buffer given as one array, with the ScatteredBuffer's interface, so one routine serves both.
class Contiguous {
 public:
  Contiguous(const void* base, std::size_t elementBytes)
      : base_(static_cast<std::byte*>(const_cast<void*>(base))), elementBytes_(elementBytes) {}
  template <typename Fn> void forEach(std::size_t begin, std::size_t length, Fn&& fn) const {
    if (length > 0) fn(base_ + begin * elementBytes_, begin, length);
  }
  std::pair<const PayloadPiece*, std::size_t> pieces(std::size_t begin1, std::size_t length1, std::size_t begin2,
                                                     std::size_t length2) const {
    pieces_ = {PayloadPiece{base_ + begin1 * elementBytes_, length1 * elementBytes_},
               PayloadPiece{base_ + begin2 * elementBytes_, length2 * elementBytes_}};
    return {pieces_.data(), pieces_.size()};
  }

 private:
  std::byte* base_;
  std::size_t elementBytes_;
  mutable std::array<PayloadPiece, 2> pieces_;
};

// The scattered buffer's pieces in the same shape.
std::pair<const PayloadPiece*, std::size_t> piecesOf(const ScatteredBuffer& buffer, std::size_t begin1,
                                                     std::size_t length1, std::size_t begin2, std::size_t length2) {
  const std::vector<PayloadPiece>& pieces = buffer.pieces(begin1, length1, begin2, length2);
  return {pieces.data(), pieces.size()};
}
std::pair<const PayloadPiece*, std::size_t> piecesOf(const Contiguous& buffer, std::size_t begin1, std::size_t length1,
                                                     std::size_t begin2, std::size_t length2) {
  return buffer.pieces(begin1, length1, begin2, length2);
}

// out[own chunk] = in[own chunk] op every peer's copy (peers in rank order), divided by n for kAvg,
// run by run of the buffer's storage. `out` may be `in`: each run is read before it is written.
template <typename Buffer>
void reduceOwnChunk(const RoundTransport& round, const SplitChunks& chunks, int rank, const AllreduceArgs& args,
                    const Buffer& in, const Buffer& out) {
  const std::size_t elementBytes = dataTypeSize(args.type), chunkBegin = chunks.begin(rank);
  // The output runs; the input's runs at the same indices (the same storage when in place).
  out.forEach(chunkBegin, chunks.length(rank), [&](std::byte* target, std::size_t index, std::size_t length) {
    const void* acc = nullptr;
    in.forEach(index, length, [&](std::byte* source, std::size_t, std::size_t) { acc = source; });
    for (int r = 0; r < round.size(); ++r) {
      if (r == rank) continue;
      const std::size_t peerIndex = chunks.offsetIn(r, rank) + (index - chunkBegin);
      reduceElements(target, acc, at(round.payload(r), peerIndex, elementBytes), length, args.type, args.op);
      acc = target;
    }
    if (args.op == ReduceOp::kAvg) divideElements(target, length, args.type, round.size());
  });
}

template <typename Buffer>
void copyPeerChunks(const RoundTransport& round, const SplitChunks& chunks, int rank, const Buffer& out,
                    std::size_t elementBytes) {
  for (int r = 0; r < round.size(); ++r) {
    if (r == rank) continue;
    const std::size_t chunkBegin = chunks.begin(r);
    out.forEach(chunkBegin, chunks.length(r), [&](std::byte* target, std::size_t index, std::size_t length) {
      std::memcpy(target, at(round.payload(r), index - chunkBegin, elementBytes), length * elementBytes);
    });
  }
}

// Round 1: the input without the own chunk. The caller runs firstRoundDone() after it.
template <typename Buffer>
void scatterRound(AlgorithmContext& context, const AllreduceArgs& args, const Buffer& in) {
  const SplitChunks chunks(args.count, context.size);
  const std::size_t ownBegin = chunks.begin(context.rank), ownEnd = chunks.begin(context.rank + 1);
  auto [gather, gatherCount] = piecesOf(in, 0, ownBegin, ownEnd, args.count - ownEnd);
  context.rounds.begin(context.header, gather, gatherCount);
  context.rounds.complete(context.deadline);
}

// After the check: out[own chunk] = every rank's copy of it reduced.
template <typename Buffer>
void reduceScattered(AlgorithmContext& context, const AllreduceArgs& args, const Buffer& in, const Buffer& out) {
  const SplitChunks chunks(args.count, context.size);
  const std::size_t elementBytes = dataTypeSize(args.type);
  context.rounds.requirePayloadBytes([&](int r) { return (args.count - chunks.length(r)) * elementBytes; });
  reduceOwnChunk(context.rounds, chunks, context.rank, args, in, out);
}

// Round 2: the finished own chunk out, every peer's finished chunk in.
template <typename Buffer>
void gatherRound(AlgorithmContext& context, const AllreduceArgs& args, const Buffer& out) {
  const SplitChunks chunks(args.count, context.size);
  const std::size_t elementBytes = dataTypeSize(args.type);
  RoundTransport& round = context.rounds;
  auto [own, ownCount] = piecesOf(out, chunks.begin(context.rank), chunks.length(context.rank), 0, 0);
  round.begin(context.header, own, ownCount);
  round.complete(context.deadline);
  round.requirePayloadBytes([&](int r) { return chunks.length(r) * elementBytes; });
  copyPeerChunks(round, chunks, context.rank, out, elementBytes);
}

template <typename Buffer>
void splitOver(AlgorithmContext& context, const AllreduceArgs& args, const Buffer& in, const Buffer& out) {
  scatterRound(context, args, in);
  firstRoundDone(context);
  reduceScattered(context, args, in, out);
  gatherRound(context, args, out);
}

Contiguous inputOf(const AllreduceArgs& args) { return Contiguous(args.send, dataTypeSize(args.type)); }
Contiguous outputOf(const AllreduceArgs& args) { return Contiguous(args.recv, dataTypeSize(args.type)); }
}  // namespace

void splitAllreduce(AlgorithmContext& context, const AllreduceArgs& args) {
  if (args.scattered != nullptr) return splitOver(context, args, *args.scattered, *args.scattered);
  splitOver(context, args, inputOf(args), outputOf(args));
}

void splitScatterRound(AlgorithmContext& context, const AllreduceArgs& args) {
  scatterRound(context, args, inputOf(args));
}
void splitReduceOwnChunk(AlgorithmContext& context, const AllreduceArgs& args) {
  reduceScattered(context, args, inputOf(args), outputOf(args));
}
void splitGatherRound(AlgorithmContext& context, const AllreduceArgs& args) {
  gatherRound(context, args, outputOf(args));
}

}  // namespace ringsync::detail
