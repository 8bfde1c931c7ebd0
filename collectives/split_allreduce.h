// The one-node all-reduce for mid-sized messages: a reduce-scatter and an all-gather through the
// shared-memory slots of two HeaderExchange rounds, with no MPI message at all.
//
//   round 1  rank r publishes every chunk of its input but its own chunk r   ((n-1)/n·S)
//            rank r reduces chunk r: its own input chunk with each peer's copy, peers in rank order
//   round 2  rank r publishes its finished chunk r                           (S/n)
//            rank r copies every peer's finished chunk into recv
//
// Each chunk is reduced once, by its owner, so every rank ends with the same bits (kAvg divides
// once, on the owned chunk). Per rank it moves ~4·S through memory at n=2 against the direct
// round's ~5·S (every rank copying all of its input, then reducing all of it), and it needs no
// rendezvous per segment as the ring over MPI does. Measured crossovers: options.h.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>

#include "header_exchange.h"
#include "ringsync/types.h"

namespace ringsync::detail {

// Which elements chunk c covers, the same split on every rank: count/n each, the first
// count % n chunks one more.
struct SplitChunks {
  SplitChunks(std::size_t count, int size) : count_(count), size_(size) {}
  std::size_t begin(int c) const {
    const std::size_t n = static_cast<std::size_t>(size_), i = static_cast<std::size_t>(c);
    return i * (count_ / n) + std::min(i, count_ % n);
  }
  std::size_t length(int c) const { return begin(c + 1) - begin(c); }
  // Where chunk c sits in rank r's round-1 payload (which leaves out chunk r), in elements.
  std::size_t offsetIn(int r, int c) const { return begin(c) - (c > r ? length(r) : 0); }
  // The largest round-1 payload of any rank, in elements (the rank with the smallest chunk).
  std::size_t largestGather() const { return count_ - length(size_ - 1); }
  std::size_t count() const { return count_; }

 private:
  std::size_t count_;
  int size_;
};

// Round 1's payload for `rank`: `send` without its own chunk, as two pieces.
std::array<PayloadPiece, 2> splitGatherPieces(const SplitChunks& chunks, int rank, const void* send,
                                              std::size_t elementBytes);

// After round 1: recv[own chunk] = own input chunk op every peer's copy (peers in rank order),
// divided by n for kAvg. `recv` may alias `send`.
void splitReduceOwnChunk(const HeaderExchange& exchange, const SplitChunks& chunks, int rank, const void* send,
                         void* recv, DataType type, ReduceOp op);

// After round 2: every peer's finished chunk into recv.
void splitCopyPeerChunks(const HeaderExchange& exchange, const SplitChunks& chunks, int rank, void* recv,
                         std::size_t elementBytes);

}  // namespace ringsync::detail
