#include "bucket_plan.h"

#include <algorithm>
#include <optional>

namespace ringsync::detail {
namespace {

// A bucket still accepting gradients of its (type, memory) pair.
struct OpenBucket {
  Bucket bucket;
  std::size_t bytes = 0;
  std::size_t limit = 0;
};

std::size_t keyOf(const GradientSpec& g) { return static_cast<std::size_t>(g.type) * 2 + (g.onDevice ? 1 : 0); }

// Where the member after one ending at `offset` starts: device buckets align every member to
// kDeviceMemberAlignment bytes so that the pack kernels take their vectorised path.
std::size_t nextOffset(std::size_t offset, const Bucket& bucket) {
  if (!bucket.onDevice) return offset;
  const std::size_t elementBytes = dataTypeSize(bucket.type);
  const std::size_t step = kDeviceMemberAlignment > elementBytes ? kDeviceMemberAlignment / elementBytes : 1;
  return (offset + step - 1) / step * step;
}

// The fused layout of members in ascending gradient index.
void layOut(Bucket& bucket, const std::vector<GradientSpec>& gradients) {
  std::size_t offset = 0;
  for (BucketMember& member : bucket.members) {
    member.offset = member.count > 0 ? nextOffset(offset, bucket) : offset;
    offset = member.offset + member.count;
  }
  bucket.count = offset;
  bucket.contiguousData = spanOf(bucket, gradients);
}

// Launch order = completion order in backward: a bucket completes with its lowest-indexed member.
void sortInLaunchOrder(std::vector<Bucket>& buckets) {
  std::sort(buckets.begin(), buckets.end(),
            [](const Bucket& a, const Bucket& b) { return a.firstGradient() > b.firstGradient(); });
}

Bucket startBucket(const GradientSpec& g) {
  Bucket bucket;
  bucket.type = g.type;
  bucket.onDevice = g.onDevice;
  return bucket;
}

}  // namespace

std::vector<Bucket> planBuckets(const std::vector<GradientSpec>& gradients, const BucketPlanLimits& limits) {
  std::vector<Bucket> buckets;
  std::vector<std::optional<OpenBucket>> open(2 * std::size(kAllDataTypes));
  auto close = [&](std::optional<OpenBucket>& slot) {
    buckets.push_back(std::move(slot->bucket));
    slot.reset();
  };
  for (std::size_t g = gradients.size(); g-- > 0;) {
    const GradientSpec& spec = gradients[g];
    const std::size_t bytes = spec.count * dataTypeSize(spec.type);
    if (bytes >= limits.bucketBytes) {
      // A bucket's worth on its own: all-reduced in place, never copied. Open buckets go on
      // collecting the small gradients around it.
      buckets.push_back(startBucket(spec));
      buckets.back().members.push_back({g, 0, spec.count});
      continue;
    }
    std::optional<OpenBucket>& slot = open[keyOf(spec)];
    if (slot && slot->bytes + bytes > slot->limit) close(slot);
    if (!slot) {
      const bool first = buckets.empty() &&
                         std::none_of(open.begin(), open.end(), [](auto& o) { return o.has_value(); });
      slot = OpenBucket{startBucket(spec), 0, first ? limits.firstBucketBytes : limits.bucketBytes};
    }
    slot->bucket.members.push_back({g, 0, spec.count});
    slot->bytes += bytes;
    if (slot->bytes >= slot->limit) close(slot);
  }
  for (auto& slot : open)
    if (slot) close(slot);
  for (Bucket& bucket : buckets) {
    std::reverse(bucket.members.begin(), bucket.members.end());  // they arrived in reverse
    layOut(bucket, gradients);
  }
  sortInLaunchOrder(buckets);
  return buckets;
}

std::vector<Bucket> bucketsFromGroups(const std::vector<GradientSpec>& gradients,
                                      const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<Bucket> buckets;
  for (std::vector<std::size_t> group : groups) {
    std::sort(group.begin(), group.end());
    // The memory of its first non-empty member (an empty tensor's pointer was not classified).
    const auto nonEmpty = std::find_if(group.begin(), group.end(),
                                       [&](std::size_t g) { return gradients[g].count > 0; });
    Bucket bucket = startBucket(gradients[nonEmpty != group.end() ? *nonEmpty : group.front()]);
    for (std::size_t g : group) bucket.members.push_back({g, 0, gradients[g].count});
    layOut(bucket, gradients);
    buckets.push_back(std::move(bucket));
  }
  sortInLaunchOrder(buckets);
  return buckets;
}

// In place needs the members back to back at exactly their fused offsets: a gap in memory or a
// padding element in the layout means packing (padding never covers memory the caller owns).
void* spanOf(const Bucket& bucket, const std::vector<GradientSpec>& buffers) {
  const std::size_t elementBytes = dataTypeSize(bucket.type);
  std::size_t dense = 0;  // where the next member starts when nothing is padded
  std::byte* start = nullptr;
  std::byte* expected = nullptr;  // where the next non-empty member must start to stay contiguous
  for (const BucketMember& member : bucket.members) {
    if (member.count == 0) continue;  // an empty tensor's pointer says nothing about layout
    if (member.offset != dense) return nullptr;
    dense = member.offset + member.count;
    auto* data = static_cast<std::byte*>(buffers[member.gradient].data);
    if (start == nullptr) {
      start = data;
    } else if (data != expected) {
      return nullptr;
    }
    expected = data + member.count * elementBytes;
  }
  return start;
}

std::vector<std::size_t> bucketOfGradient(const std::vector<Bucket>& buckets, std::size_t gradientCount) {
  std::vector<std::size_t> bucketOf(gradientCount, 0);
  for (std::size_t b = 0; b < buckets.size(); ++b)
    for (const BucketMember& member : buckets[b].members) bucketOf[member.gradient] = b;
  return bucketOf;
}

}  // namespace ringsync::detail
