// The two halves of the split all-reduce, one round each, usable alone: the reduce-scatter round
// and the all-gather round. A round goes through shared memory when every rank is on this node and
// by point-to-point messages otherwise (round_transport.h); either way it carries this call's
// fingerprint, so a half run first is where the call is checked.
//
//   reduce-scatter round  rank r publishes every chunk of its input but its own chunk r, then
//                         reduces chunk r: its own input chunk with each peer's copy, peers in rank
//                         order (kAvg: divided once, by the number of ranks)
//   all-gather round      rank r publishes its chunk r, then copies every peer's chunk into place
//
// The halves work on views of an array cut by a ChunkLayout (chunk_layout.h): a contiguous buffer
// (ContiguousView, which can also stand for one chunk alone) or a ScatteredBuffer, so that the
// split all-reduce reduces an averager's bucket where its gradients lie. A view calls
// fn(std::byte* data, std::size_t index, std::size_t length) for every stored run of elements
// [begin, begin + length) (forEach), and lists two ranges as payload pieces (pieces).
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <utility>

#include "algorithm_context.h"
#include "chunk_layout.h"
#include "reduce_kernels.h"
#include "scattered_buffer.h"

namespace ringsync::detail {

// Elements [origin, origin + n) of an array, stored contiguously at `base`: origin 0 for a whole
// buffer, the chunk's first element for a buffer that holds one chunk (a reduce-scatter's output,
// an all-gather's input).
class ContiguousView {
 public:
  ContiguousView(const void* base, std::size_t elementBytes, std::size_t origin = 0)
      : base_(static_cast<std::byte*>(const_cast<void*>(base))), elementBytes_(elementBytes), origin_(origin) {}
  template <typename Fn> void forEach(std::size_t begin, std::size_t length, Fn&& fn) const {
    if (length > 0) fn(at(begin), begin, length);
  }
  std::pair<const PayloadPiece*, std::size_t> pieces(std::size_t begin1, std::size_t length1, std::size_t begin2,
                                                     std::size_t length2) const {
    pieces_ = {PayloadPiece{at(begin1), length1 * elementBytes_}, PayloadPiece{at(begin2), length2 * elementBytes_}};
    return {pieces_.data(), pieces_.size()};
  }

 private:
  // A range may be empty at the array's end: its address is then never dereferenced.
  std::byte* at(std::size_t index) const { return index < origin_ ? base_ : base_ + (index - origin_) * elementBytes_; }

  std::byte* base_;
  std::size_t elementBytes_;
  std::size_t origin_;
  mutable std::array<PayloadPiece, 2> pieces_;
};

inline std::pair<const PayloadPiece*, std::size_t> piecesOf(const ContiguousView& view, std::size_t begin1,
                                                            std::size_t length1, std::size_t begin2,
                                                            std::size_t length2) {
  return view.pieces(begin1, length1, begin2, length2);
}
inline std::pair<const PayloadPiece*, std::size_t> piecesOf(const ScatteredBuffer& buffer, std::size_t begin1,
                                                            std::size_t length1, std::size_t begin2,
                                                            std::size_t length2) {
  const std::vector<PayloadPiece>& pieces = buffer.pieces(begin1, length1, begin2, length2);
  return {pieces.data(), pieces.size()};
}

// Where chunk c sits in rank r's reduce-scatter payload, which leaves out chunk r (in elements).
inline std::size_t offsetInScatterPayload(const ChunkLayout& chunks, int r, int c) {
  return chunks.begin(c) - (c > r ? chunks.length(r) : 0);
}

// Reduce-scatter round, first part: publishes `in` without this rank's chunk and completes the
// round. The caller runs firstRoundDone() after it (the check), then reduceOwnChunk.
template <typename In> void scatterRound(AlgorithmContext& context, const ChunkLayout& chunks, const In& in) {
  const std::size_t ownBegin = chunks.begin(context.rank), ownEnd = ownBegin + chunks.length(context.rank);
  auto [pieces, pieceCount] = piecesOf(in, 0, ownBegin, ownEnd, chunks.count() - ownEnd);
  context.rounds.begin(context.header, pieces, pieceCount);
  context.rounds.complete(context.deadline);
}

// Reduce-scatter round, second part: out[own chunk] = in[own chunk] op every peer's copy (peers in
// rank order), divided by the ranks for kAvg, run by run of out's storage. `out` may be `in`: each
// run is read before it is written. Refuses payloads of another size (a peer in another call).
template <typename In, typename Out> void reduceOwnChunk(const AlgorithmContext& context, const ChunkLayout& chunks,
                                                         DataType type, ReduceOp op, const In& in, const Out& out) {
  const RoundTransport& round = context.rounds;
  const std::size_t elementBytes = dataTypeSize(type), chunkBegin = chunks.begin(context.rank);
  round.requirePayloadBytes([&](int r) { return (chunks.count() - chunks.length(r)) * elementBytes; });
  out.forEach(chunkBegin, chunks.length(context.rank), [&](std::byte* target, std::size_t index, std::size_t length) {
    const void* acc = nullptr;
    in.forEach(index, length, [&](std::byte* source, std::size_t, std::size_t) { acc = source; });
    for (int r = 0; r < round.size(); ++r) {
      if (r == context.rank) continue;
      const std::size_t peerIndex = offsetInScatterPayload(chunks, r, context.rank) + (index - chunkBegin);
      reduceElements(target, acc, round.payload(r) + peerIndex * elementBytes, length, type, op);
      acc = target;
    }
    if (round.size() == 1 && target != acc) std::memcpy(target, acc, length * elementBytes);
    if (op == ReduceOp::kAvg) divideElements(target, length, type, round.size());
  });
}

// All-gather round: publishes `own`'s chunk of this rank, then copies every peer's chunk into `out`
// (this rank's chunk of `out` is the caller's: `own` may be it). `checkFirst`: this round is the
// call's first, so the check runs before any peer's data is read.
template <typename Own, typename Out> void gatherRound(AlgorithmContext& context, const ChunkLayout& chunks,
                                                       std::size_t elementBytes, const Own& own, const Out& out,
                                                       bool checkFirst) {
  RoundTransport& round = context.rounds;
  auto [pieces, pieceCount] = piecesOf(own, chunks.begin(context.rank), chunks.length(context.rank), 0, 0);
  round.begin(context.header, pieces, pieceCount);
  round.complete(context.deadline);
  if (checkFirst) firstRoundDone(context);
  round.requirePayloadBytes([&](int r) { return chunks.length(r) * elementBytes; });
  for (int r = 0; r < round.size(); ++r) {
    if (r == context.rank) continue;
    const std::size_t chunkBegin = chunks.begin(r);
    out.forEach(chunkBegin, chunks.length(r), [&](std::byte* target, std::size_t index, std::size_t length) {
      std::memcpy(target, round.payload(r) + (index - chunkBegin) * elementBytes, length * elementBytes);
    });
  }
}

}  // namespace ringsync::detail
