// The partition of a ShardedGradientAverager (the rule is documented in
// include/ringsync/sharded_averager.h): bucket b's fused array of C elements is padded to
// P = ceil(C / N) * N and cut into N blocks of P / N, so that each bucket is one
// reduce-scatter (MPI_Reduce_scatter_block semantics: equal blocks) and one all-gather; rank r
// owns block r, and of each tensor the part of it that falls into block r.
//
//   fused element:  0  1  2  3  4  5  6  7  8  9  -  -     C = 10, N = 4: P = 12, blocks of 3
//   tensor:         0  0  0  0  0  1  1  1  1  2  (padding)
//   owner:          r0 r0 r0 r1 r1 r1 r2 r2 r2 r3 r3 r3
//   so rank 1 owns tensor 0's elements [3, 5) and tensor 1's [0, 1); tensor 2 is rank 3's alone.
//
// Pure planning from the bucket plan, the parameters and N: no MPI. Every rank computes the same
// partition from the same lists (and the averager compares hash() between the ranks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bucket_plan.h"
#include "ringsync/sharded_averager.h"

namespace ringsync::detail {

class ShardPlan {
 public:
  // `parameters` mirror the gradients the buckets were planned from (same counts and types).
  ShardPlan(const std::vector<Bucket>& buckets, const std::vector<GradientSpec>& parameters, int ranks);

  int ranks() const { return ranks_; }
  // Elements per rank of bucket b: ceil(count / ranks) (0 for a bucket of empty tensors).
  std::size_t block(std::size_t bucket) const { return blocks_[bucket]; }
  std::size_t paddedCount(std::size_t bucket) const { return blocks_[bucket] * static_cast<std::size_t>(ranks_); }
  // Rank `rank`'s elements of tensor `tensor` (its own index space: [0, count)).
  ShardRange owned(std::size_t tensor, int rank) const;
  // Rank `rank`'s elements of `member` (a member of a bucket of this plan).
  ShardRange owned(const BucketMember& member, std::size_t bucket, int rank) const;
  std::size_t ownedElements(int rank) const;

  // Where the bucket's parameters lie back to back at their fused offsets (spanOf), or nullptr.
  void* parameterSpan(std::size_t bucket) const { return parameterSpans_[bucket]; }
  // Whether the reduce-scatter (of the gradients) and the all-gather (of the parameters) can run
  // in place over the caller's memory: back to back, and no padding needed.
  bool reduceScatterInPlace(std::size_t bucket) const;
  bool gatherInPlace(std::size_t bucket) const;

  // FNV-1a over the rank count and every bucket's count, block and member offsets.
  std::uint64_t hash() const;

 private:
  const std::vector<Bucket>& buckets_;
  int ranks_;
  std::vector<std::size_t> blocks_;
  std::vector<void*> parameterSpans_;
  std::vector<std::size_t> bucketOf_;  // per tensor
  std::vector<std::size_t> memberOf_;  // per tensor: its index among its bucket's members
};

}  // namespace ringsync::detail
