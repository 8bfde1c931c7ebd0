#include "bucket_layout.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace ringsync::torch::detail {
namespace {

struct OpenBucket {
  BucketLayout layout;
  std::size_t bytes = 0;
  std::size_t limit = 0;
};

bool sameKind(const BucketLayout& bucket, const ParameterShape& p) {
  return bucket.dtype == p.dtype && bucket.device == p.device;
}

// Members were gathered in reverse; the bucket lays them out in ascending parameter order.
BucketLayout finish(BucketLayout bucket, const std::vector<ParameterShape>& parameters) {
  std::reverse(bucket.parameters.begin(), bucket.parameters.end());
  bucket.offsets.clear();
  bucket.count = 0;
  for (std::size_t p : bucket.parameters) {
    bucket.offsets.push_back(bucket.count);
    bucket.count += parameters[p].count;
  }
  return bucket;
}

}  // namespace

std::vector<BucketLayout> planBuckets(const std::vector<ParameterShape>& parameters, std::size_t bucketBytes,
                                      std::size_t firstBucketBytes) {
  std::vector<BucketLayout> buckets;
  std::vector<OpenBucket> open;  // one per (dtype, device) seen so far
  bool anyStarted = false;
  auto close = [&](std::size_t slot) {
    buckets.push_back(finish(std::move(open[slot].layout), parameters));
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(slot));
  };
  for (std::size_t p = parameters.size(); p-- > 0;) {
    const ParameterShape& shape = parameters[p];
    const std::size_t bytes = shape.count * c10::elementSize(shape.dtype);
    if (bytes >= bucketBytes) {
      buckets.push_back(finish(BucketLayout{shape.dtype, shape.device, {p}, {}, 0}, parameters));
      anyStarted = true;
      continue;
    }
    auto slot = std::find_if(open.begin(), open.end(), [&](const OpenBucket& o) { return sameKind(o.layout, shape); });
    if (slot != open.end() && slot->bytes + bytes > slot->limit) {
      close(static_cast<std::size_t>(slot - open.begin()));
      slot = open.end();
    }
    if (slot == open.end()) {
      open.push_back(OpenBucket{BucketLayout{shape.dtype, shape.device, {}, {}, 0}, 0,
                                anyStarted ? bucketBytes : firstBucketBytes});
      anyStarted = true;
      slot = open.end() - 1;
    }
    slot->layout.parameters.push_back(p);
    slot->bytes += bytes;
    if (slot->bytes >= slot->limit) close(static_cast<std::size_t>(slot - open.begin()));
  }
  while (!open.empty()) close(0);
  // Launch order = completion order in backward: a bucket completes with its lowest parameter.
  std::stable_sort(buckets.begin(), buckets.end(), [](const BucketLayout& a, const BucketLayout& b) {
    return a.parameters.front() > b.parameters.front();
  });
  return buckets;
}

}  // namespace ringsync::torch::detail
