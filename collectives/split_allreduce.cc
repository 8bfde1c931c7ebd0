#include "split_allreduce.h"

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
}  // namespace

std::array<PayloadPiece, 2> splitGatherPieces(const SplitChunks& chunks, int rank, const void* send,
                                              std::size_t elementBytes) {
  const std::size_t ownBegin = chunks.begin(rank), ownEnd = chunks.begin(rank + 1);
  return {PayloadPiece{send, ownBegin * elementBytes},
          PayloadPiece{at(send, ownEnd, elementBytes), (chunks.count() - ownEnd) * elementBytes}};
}

void splitReduceOwnChunk(const HeaderExchange& exchange, const SplitChunks& chunks, int rank, const void* send,
                         void* recv, DataType type, ReduceOp op) {
  const std::size_t elementBytes = dataTypeSize(type), length = chunks.length(rank);
  if (length == 0) return;
  void* out = at(recv, chunks.begin(rank), elementBytes);
  const void* acc = at(send, chunks.begin(rank), elementBytes);  // recv may alias send: read first
  for (int r = 0; r < exchange.size(); ++r) {
    if (r == rank) continue;
    reduceElements(out, acc, at(exchange.payload(r), chunks.offsetIn(r, rank), elementBytes), length, type, op);
    acc = out;
  }
  if (op == ReduceOp::kAvg) divideElements(out, length, type, exchange.size());
}

void splitCopyPeerChunks(const HeaderExchange& exchange, const SplitChunks& chunks, int rank, void* recv,
                         std::size_t elementBytes) {
  for (int r = 0; r < exchange.size(); ++r)
    if (r != rank && chunks.length(r) > 0)
      std::memcpy(at(recv, chunks.begin(r), elementBytes), exchange.payload(r), chunks.length(r) * elementBytes);
}

}  // namespace ringsync::detail
