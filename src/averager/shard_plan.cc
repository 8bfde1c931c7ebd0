#include "shard_plan.h"

#include <algorithm>

namespace ringsync::detail {

ShardPlan::ShardPlan(const std::vector<Bucket>& buckets, const std::vector<GradientSpec>& parameters, int ranks)
    : buckets_(buckets), ranks_(ranks), bucketOf_(parameters.size()), memberOf_(parameters.size()) {
  const std::size_t n = static_cast<std::size_t>(ranks);
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    blocks_.push_back((buckets[b].count + n - 1) / n);
    parameterSpans_.push_back(spanOf(buckets[b], parameters));
    for (std::size_t m = 0; m < buckets[b].members.size(); ++m) {
      bucketOf_[buckets[b].members[m].gradient] = b;
      memberOf_[buckets[b].members[m].gradient] = m;
    }
  }
}

ShardRange ShardPlan::owned(const BucketMember& member, std::size_t bucket, int rank) const {
  // Chunk `rank` is [first, last) of the fused array; the member covers [offset, offset + count).
  const ElementRange piece = chunk(bucket, rank);
  const std::size_t first = piece.begin, last = piece.begin + piece.count;
  const std::size_t begin = std::min(first > member.offset ? first - member.offset : 0, member.count);
  const std::size_t end = std::min(last > member.offset ? last - member.offset : 0, member.count);
  return {begin, std::max(begin, end)};
}

int ShardPlan::chunkOf(std::size_t bucket, std::size_t fused) const {
  // The first `extra` chunks hold base + 1 elements, the others base (ChunkLayout's cut).
  const std::size_t n = static_cast<std::size_t>(ranks_);
  const std::size_t base = buckets_[bucket].count / n, extra = buckets_[bucket].count % n;
  const std::size_t longPart = extra * (base + 1);
  return static_cast<int>(fused < longPart ? fused / (base + 1) : extra + (fused - longPart) / base);
}

ShardRange ShardPlan::owned(std::size_t tensor, int rank) const {
  const std::size_t bucket = bucketOf_[tensor];
  return owned(buckets_[bucket].members[memberOf_[tensor]], bucket, rank);
}

std::size_t ShardPlan::ownedElements(int rank) const {
  std::size_t total = 0;
  for (std::size_t t = 0; t < bucketOf_.size(); ++t) total += owned(t, rank).count();
  return total;
}

bool ShardPlan::reduceScatterInPlace(std::size_t bucket) const {
  return buckets_[bucket].contiguousData != nullptr && buckets_[bucket].count == paddedCount(bucket);
}

bool ShardPlan::gatherInPlace(std::size_t bucket) const {
  return parameterSpans_[bucket] != nullptr && buckets_[bucket].count == paddedCount(bucket);
}

std::uint64_t ShardPlan::hash() const {
  std::uint64_t hash = 1469598103934665603ull;  // FNV-1a, 64 bit
  auto mix = [&](std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= (value >> (8 * i)) & 0xffu;
      hash *= 1099511628211ull;
    }
  };
  mix(static_cast<std::uint64_t>(ranks_));
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    mix(buckets_[b].count);
    mix(blocks_[b]);
    for (const BucketMember& member : buckets_[b].members) {
      mix(member.gradient);
      mix(member.offset);
    }
  }
  return hash;
}

}  // namespace ringsync::detail
