// The partition of a ShardedGradientAverager (the rule is documented in
// include/ringsync/sharded_averager.h): bucket b's fused array of C elements is cut into N chunks
// exactly as the all-reduce cuts it (collectives/chunk_layout.h: sizes differ by at most one, the
// first C mod N one longer), and rank r owns chunk r. The reduce-scatter and the all-gather take
// equal blocks (MPI_Reduce_scatter_block semantics), so they run over a padded array of N blocks of
// ceil(C / N): block r holds chunk r, then a zero where chunk r is the shorter size.
//
//   fused element:  0  1  2  3  4  5  6  7  8  9          C = 10, N = 4: chunks of 3, 3, 2, 2
//   tensor:         0  0  0  0  0  1  1  1  1  2
//   owner:          r0 r0 r0 r1 r1 r1 r2 r2 r3 r3
//   padded array:   [0 1 2] [3 4 5] [6 7 -] [8 9 -]   blocks of 3 ('-': padding, never a tensor's)
//   so rank 1 owns tensor 0's elements [3, 5) and tensor 1's [0, 1); tensor 2 is rank 3's alone.
//
// Owning the all-reduce's chunks makes the reduce-scatter sum each element in the order the
// replicated averager's all-reduce does when the core runs the same family of algorithm for both
// (the round halves, or the ring): the sharded and the replicated runs then agree bit for bit.
//
// Pure planning from the bucket plan, the parameters and N: no MPI. Every rank computes the same
// partition from the same lists (and the averager compares hash() between the ranks).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bucket_plan.h"
#include "collectives/chunk_layout.h"
#include "ringsync/sharded_averager.h"

namespace ringsync::detail {

class ShardPlan {
 public:
  // `buckets` must outlive the plan; `parameters` mirror the gradients they were planned from.
  ShardPlan(const std::vector<Bucket>& buckets, const std::vector<GradientSpec>& parameters, int ranks);

  int ranks() const { return ranks_; }
  // Rank `rank`'s elements of bucket b's fused (unpadded) array: the all-reduce's chunk.
  ElementRange chunk(std::size_t bucket, int rank) const {
    return ChunkLayout(buckets_[bucket].count, ranks_).chunk(rank);
  }
  // Elements per rank of the padded array: ceil(count / ranks) (0 for a bucket of empty tensors).
  std::size_t block(std::size_t bucket) const { return blocks_[bucket]; }
  std::size_t paddedCount(std::size_t bucket) const { return blocks_[bucket] * static_cast<std::size_t>(ranks_); }
  // Rank `rank`'s elements of tensor `tensor` (its own index space: [0, count)).
  ShardRange owned(std::size_t tensor, int rank) const;
  // Rank `rank`'s elements of `member` (a member of bucket `bucket` of this plan).
  ShardRange owned(const BucketMember& member, std::size_t bucket, int rank) const;
  std::size_t ownedElements(int rank) const;

  // Calls fn(std::size_t tensorIndex, std::size_t paddedIndex, std::size_t length) for every run of
  // `range` (elements of `member`) as it lies in the padded array: one run per chunk it spans.
  template <typename Fn>
  void forEachRun(const BucketMember& member, std::size_t bucket, ShardRange range, Fn&& fn) const {
    for (std::size_t i = range.begin; i < range.end;) {
      const std::size_t fused = member.offset + i;
      const int c = chunkOf(bucket, fused);
      const ElementRange piece = chunk(bucket, c);
      const std::size_t length = std::min(range.end - i, piece.begin + piece.count - fused);
      fn(i, static_cast<std::size_t>(c) * blocks_[bucket] + (fused - piece.begin), length);
      i += length;
    }
  }

  // Where the bucket's parameters lie back to back at their fused offsets (spanOf), or nullptr.
  void* parameterSpan(std::size_t bucket) const { return parameterSpans_[bucket]; }
  // Whether the reduce-scatter (of the gradients) and the all-gather (of the parameters) can run
  // in place over the caller's memory: back to back, and no padding needed (count a multiple of N).
  bool reduceScatterInPlace(std::size_t bucket) const;
  bool gatherInPlace(std::size_t bucket) const;

  // FNV-1a over the rank count and every bucket's count, block and member offsets.
  std::uint64_t hash() const;

 private:
  int chunkOf(std::size_t bucket, std::size_t fused) const;  // the chunk holding fused element `fused`

  const std::vector<Bucket>& buckets_;
  int ranks_;
  std::vector<std::size_t> blocks_;
  std::vector<void*> parameterSpans_;
  std::vector<std::size_t> bucketOf_;  // per tensor
  std::vector<std::size_t> memberOf_;  // per tensor: its index among its bucket's members
};

}  // namespace ringsync::detail
