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

template <typename Buffer>
void splitOver(AlgorithmContext& context, const AllreduceArgs& args, const Buffer& in, const Buffer& out) {
  const int rank = context.rank;
  const SplitChunks chunks(args.count, context.size);
  const std::size_t elementBytes = dataTypeSize(args.type);
  RoundTransport& round = context.rounds;

  // Round 1: the input without the own chunk.
  const std::size_t ownBegin = chunks.begin(rank), ownEnd = chunks.begin(rank + 1);
  auto [gather, gatherCount] = piecesOf(in, 0, ownBegin, ownEnd, args.count - ownEnd);
  round.begin(context.header, gather, gatherCount);
  round.complete(context.deadline);
  firstRoundDone(context);
  round.requirePayloadBytes([&](int r) { return (args.count - chunks.length(r)) * elementBytes; });
  reduceOwnChunk(round, chunks, rank, args, in, out);

  // Round 2: the finished own chunk.
  auto [own, ownCount] = piecesOf(out, ownBegin, chunks.length(rank), 0, 0);
  round.begin(context.header, own, ownCount);
  round.complete(context.deadline);
  round.requirePayloadBytes([&](int r) { return chunks.length(r) * elementBytes; });
  copyPeerChunks(round, chunks, rank, out, elementBytes);
}
}  // namespace

void splitAllreduce(AlgorithmContext& context, const AllreduceArgs& args) {
  if (args.scattered != nullptr) return splitOver(context, args, *args.scattered, *args.scattered);
  const std::size_t elementBytes = dataTypeSize(args.type);
  splitOver(context, args, Contiguous(args.send, elementBytes), Contiguous(args.recv, elementBytes));
}

}  // namespace ringsync::detail
