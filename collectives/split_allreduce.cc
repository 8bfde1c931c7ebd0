#include "split_allreduce.h"

#include <array>
#include <cstring>

#include "reduce_kernels.h"

namespace ringsync::detail {

namespace {
const std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<const std::byte*>(base) + elements * elementBytes;
}
std::byte* at(void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(base) + elements * elementBytes;
}

// recv[own chunk] = own input chunk op every peer's copy (peers in rank order), divided by n for
// kAvg. `recv` may alias `send`: the own input is read before the first write.
void reduceOwnChunk(const RoundTransport& round, const SplitChunks& chunks, int rank, const AllreduceArgs& args) {
  const std::size_t elementBytes = dataTypeSize(args.type), length = chunks.length(rank);
  if (length == 0) return;
  void* out = at(args.recv, chunks.begin(rank), elementBytes);
  const void* acc = at(args.send, chunks.begin(rank), elementBytes);
  for (int r = 0; r < round.size(); ++r) {
    if (r == rank) continue;
    reduceElements(out, acc, at(round.payload(r), chunks.offsetIn(r, rank), elementBytes), length, args.type, args.op);
    acc = out;
  }
  if (args.op == ReduceOp::kAvg) divideElements(out, length, args.type, round.size());
}

void copyPeerChunks(const RoundTransport& round, const SplitChunks& chunks, int rank, void* recv,
                    std::size_t elementBytes) {
  for (int r = 0; r < round.size(); ++r)
    if (r != rank && chunks.length(r) > 0)
      std::memcpy(at(recv, chunks.begin(r), elementBytes), round.payload(r), chunks.length(r) * elementBytes);
}
}  // namespace

void splitAllreduce(AlgorithmContext& context, const AllreduceArgs& args) {
  const int rank = context.rank;
  const SplitChunks chunks(args.count, context.size);
  const std::size_t elementBytes = dataTypeSize(args.type);
  RoundTransport& round = context.rounds;

  // Round 1: the input without the own chunk, as two pieces.
  const std::size_t ownBegin = chunks.begin(rank), ownEnd = chunks.begin(rank + 1);
  const std::array<PayloadPiece, 2> gather{
      PayloadPiece{args.send, ownBegin * elementBytes},
      PayloadPiece{at(args.send, ownEnd, elementBytes), (args.count - ownEnd) * elementBytes}};
  round.run(context.header, gather, context.deadline);
  firstRoundDone(context);
  round.requirePayloadBytes([&](int r) { return (args.count - chunks.length(r)) * elementBytes; });
  reduceOwnChunk(round, chunks, rank, args);

  // Round 2: the finished own chunk.
  round.run(context.header, at(args.recv, ownBegin, elementBytes), chunks.length(rank) * elementBytes,
            context.deadline);
  round.requirePayloadBytes([&](int r) { return chunks.length(r) * elementBytes; });
  copyPeerChunks(round, chunks, rank, args.recv, elementBytes);
}

}  // namespace ringsync::detail
