// Bucket planning and the host pack/unpack, on one rank: which gradients share a bucket, the
// launch order, the first bucket's smaller limit, tensors at and above the threshold, empty
// tensors, types and memory kinds kept apart, in-place detection, and the fp16 conversions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "src/averager/bucket_plan.h"
#include "src/averager/fusion_pack.h"
#include "collectives/half.h"
#include "collectives/half_convert.h"
#include "collectives/scattered_buffer.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::detail;

namespace {

constexpr BucketPlanLimits kLimits{1024, 256};  // 256 / 64 float32 elements

// Gradients of the given counts in separate (non-adjacent) places of one arena: a gap of one
// element after each, so no two are contiguous unless a test says so.
struct Arena {
  explicit Arena(const std::vector<std::size_t>& counts, DataType type = DataType::kFloat32, std::size_t gap = 1) {
    std::size_t total = 0;
    for (std::size_t c : counts) total += c + gap;
    storage.resize(total * dataTypeSize(type) + 1);
    std::size_t offset = 0;
    for (std::size_t c : counts) {
      specs.push_back({storage.data() + offset * dataTypeSize(type), c, type, false});
      offset += c + gap;
    }
  }
  std::vector<std::uint8_t> storage;
  std::vector<GradientSpec> specs;
};

std::vector<std::vector<std::size_t>> membersOf(const std::vector<Bucket>& buckets) {
  std::vector<std::vector<std::size_t>> out;
  for (const Bucket& b : buckets) {
    out.emplace_back();
    for (const BucketMember& m : b.members) out.back().push_back(m.gradient);
  }
  return out;
}

using Members = std::vector<std::vector<std::size_t>>;

}  // namespace

TEST_CASE("bucket plan: tensors at the threshold and above get buckets of their own", "[fusion][plan]") {
  Arena arena({10, 256, 20, 256, 1000, 5});
  const auto buckets = planBuckets(arena.specs, kLimits);
  // Launch order is completion order in backward (highest index first); the small ones share one
  // bucket, which completes with gradient 0.
  CHECK(membersOf(buckets) == Members{{4}, {3}, {1}, {0, 2, 5}});
  CHECK(buckets[0].contiguousData == arena.specs[4].data);  // alone: all-reduced in place
  CHECK(buckets[1].contiguousData == arena.specs[3].data);
  CHECK(buckets[3].contiguousData == nullptr);  // separate tensors: packed
  CHECK(buckets[3].count == 35);
  CHECK(buckets[3].members[1].offset == 10);  // ascending gradient index inside the bucket
  CHECK(buckets[3].members[2].offset == 30);
  CHECK(bucketOfGradient(buckets, 6) == std::vector<std::size_t>{3, 2, 3, 1, 0, 3});
}

TEST_CASE("bucket plan: the first bucket is small, later ones fill to bucketBytes", "[fusion][plan]") {
  Arena arena(std::vector<std::size_t>(400, 1));  // 400 tiny gradients of 4 bytes
  const auto buckets = planBuckets(arena.specs, kLimits);
  REQUIRE(buckets.size() == 3);
  CHECK(buckets[0].members.size() == 64);  // 256 bytes, exactly the first limit
  CHECK(buckets[0].firstGradient() == 336);
  CHECK(buckets[1].members.size() == 256);  // 1024 bytes, exactly the bucket limit
  CHECK(buckets[2].members.size() == 80);   // the rest
  CHECK(buckets[2].firstGradient() == 0);
  for (const Bucket& b : buckets) CHECK(b.bytes() <= kLimits.bucketBytes);
}

TEST_CASE("bucket plan: a bucket never exceeds its limit; the next tensor starts a new one", "[fusion][plan]") {
  Arena arena({100, 100, 100, 100, 10});  // 400 bytes each, below bucketBytes, above firstBucketBytes
  const auto buckets = planBuckets(arena.specs, kLimits);
  // 10 opens the first bucket (limit 256 B); 100 does not fit, so it closes it and starts one of 1024 B.
  CHECK(membersOf(buckets) == Members{{4}, {2, 3}, {0, 1}});
  for (const Bucket& b : buckets) CHECK(b.bytes() <= kLimits.bucketBytes);
}

TEST_CASE("bucket plan: empty tensors join a bucket and never block in-place", "[fusion][plan]") {
  Arena arena({0, 5, 0, 0, 300, 0});
  const auto buckets = planBuckets(arena.specs, kLimits);
  CHECK(membersOf(buckets) == Members{{4}, {0, 1, 2, 3, 5}});
  CHECK(buckets[1].count == 5);
  CHECK(buckets[1].contiguousData == arena.specs[1].data);  // the only non-empty member

  Arena empty({0, 0});
  const auto onlyEmpty = planBuckets(empty.specs, kLimits);
  REQUIRE(onlyEmpty.size() == 1);
  CHECK(onlyEmpty[0].count == 0);
  CHECK(onlyEmpty[0].contiguousData == nullptr);
  CHECK(planBuckets({}, kLimits).empty());
}

TEST_CASE("bucket plan: types and memory kinds never share a bucket", "[fusion][plan]") {
  Arena arena({10, 10, 10, 10, 10});
  arena.specs[1].type = arena.specs[3].type = DataType::kFloat64;
  arena.specs[4].onDevice = true;
  const auto buckets = planBuckets(arena.specs, kLimits);
  CHECK(membersOf(buckets) == Members{{4}, {1, 3}, {0, 2}});
  CHECK(buckets[0].onDevice);
  CHECK(buckets[1].type == DataType::kFloat64);
  CHECK(buckets[2].type == DataType::kFloat32);
  CHECK_FALSE(buckets[2].onDevice);
}

TEST_CASE("bucket plan: members back to back in index order are all-reduced in place", "[fusion][plan]") {
  Arena adjacent({7, 0, 9, 3}, DataType::kFloat32, 0);
  auto buckets = planBuckets(adjacent.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].contiguousData == adjacent.specs[0].data);
  CHECK(buckets[0].count == 19);

  // Adjacent but in descending order: the span's element order would differ from the packed
  // order other ranks may use, so it must be packed.
  std::vector<float> storage(16);
  std::vector<GradientSpec> reversed = {{storage.data() + 7, 9, DataType::kFloat32, false},
                                        {storage.data(), 7, DataType::kFloat32, false}};
  buckets = planBuckets(reversed, kLimits);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].contiguousData == nullptr);

  Arena gap({7, 9}, DataType::kFloat32, 1);
  CHECK(planBuckets(gap.specs, kLimits)[0].contiguousData == nullptr);
}

TEST_CASE("bucket plan: device members start on 16-byte boundaries; padding means packing", "[fusion][plan]") {
  // float32: 4 elements per 16 bytes. Back to back in memory, but 3 elements leave a gap in the
  // padded layout, so the bucket is packed; multiples of 4 elements stay in place.
  Arena dense({3, 5, 4}, DataType::kFloat32, 0);
  for (GradientSpec& g : dense.specs) g.onDevice = true;
  auto buckets = planBuckets(dense.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  std::vector<std::size_t> offsets;
  for (const BucketMember& m : buckets[0].members) offsets.push_back(m.offset);
  CHECK(offsets == std::vector<std::size_t>{0, 4, 12});
  CHECK(buckets[0].count == 16);
  CHECK(buckets[0].contiguousData == nullptr);

  Arena aligned({4, 8, 0, 3}, DataType::kFloat32, 0);
  for (GradientSpec& g : aligned.specs) g.onDevice = true;
  buckets = planBuckets(aligned.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  CHECK(buckets[0].members[1].offset == 4);
  CHECK(buckets[0].members[3].offset == 12);
  CHECK(buckets[0].count == 15);
  CHECK(buckets[0].contiguousData == aligned.specs[0].data);

  // float64: 2 per 16 bytes; int8: 16. Host buckets of the same counts stay dense.
  Arena doubles({1, 1}, DataType::kFloat64, 0);
  for (GradientSpec& g : doubles.specs) g.onDevice = true;
  CHECK(planBuckets(doubles.specs, kLimits)[0].members[1].offset == 2);
  Arena bytes({5, 5}, DataType::kInt8, 0);
  for (GradientSpec& g : bytes.specs) g.onDevice = true;
  CHECK(planBuckets(bytes.specs, kLimits)[0].members[1].offset == 16);
  Arena host({3, 5}, DataType::kFloat32, 0);
  const auto hostBuckets = planBuckets(host.specs, kLimits);
  CHECK(hostBuckets[0].members[1].offset == 3);
  CHECK(hostBuckets[0].contiguousData == host.specs[0].data);
}

TEST_CASE("fusion pack: a bucket as one array, offsets by ascending index; fp16 one pass each way", "[fusion][pack]") {
  Arena arena({3, 0, 4, 2});
  for (std::size_t g = 0; g < 4; ++g)
    for (std::size_t i = 0; i < arena.specs[g].count; ++i)
      static_cast<float*>(arena.specs[g].data)[i] = static_cast<float>(10 * g + i);
  const auto buckets = planBuckets(arena.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  // The spans the host runner hands to the core, in member order.
  std::vector<Span> spans;
  for (const BucketMember& member : buckets[0].members)
    spans.push_back({arena.specs[member.gradient].data, member.count});
  const ScatteredBuffer scattered(spans, sizeof(float));
  std::vector<float> fused(buckets[0].count, -1.0f);
  scattered.gather(fused.data());
  CHECK(fused == std::vector<float>{0, 1, 2, 20, 21, 22, 23, 30, 31});
  for (float& v : fused) v *= 2;
  scattered.scatter(fused.data());
  CHECK(static_cast<float*>(arena.specs[2].data)[3] == 46.0f);
  CHECK(static_cast<float*>(arena.specs[3].data)[1] == 62.0f);
  CHECK(static_cast<float*>(arena.specs[0].data)[0] == 0.0f);

  std::vector<std::uint16_t> half(buckets[0].count);
  packBucketAsFloat16(buckets[0], arena.specs, half.data());
  CHECK(float16ToFloat(half[3]) == 40.0f);
  half[8] = floatToFloat16(0.5f);
  unpackBucketFromFloat16(buckets[0], arena.specs, half.data());
  CHECK(static_cast<float*>(arena.specs[3].data)[1] == 0.5f);
}

TEST_CASE("fusion pack: fp16 conversion matches half.h, rounding to nearest even", "[fusion][pack]") {
  // Normal, subnormal, overflow, ties and signed values; lengths that are not multiples of 8.
  std::vector<float> in;
  for (int e = -30; e <= 17; ++e)
    for (float m : {1.0f, 1.5f, 1.0009765625f, 1.00048828125f, 1.00146484375f, 1.999f})
      for (float s : {1.0f, -1.0f}) in.push_back(s * std::ldexp(m, e));
  in.push_back(65504.0f);
  in.push_back(65520.0f);  // rounds to infinity
  in.push_back(0.0f);
  in.push_back(-0.0f);
  in.push_back(INFINITY);
  std::vector<std::uint16_t> half(in.size());
  convertFloat32ToFloat16(in.data(), half.data(), in.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) wrong += half[i] != floatToFloat16(in[i]);
  CHECK(wrong == 0);
  std::vector<float> back(in.size());
  convertFloat16ToFloat32(half.data(), back.data(), half.size());
  for (std::size_t i = 0; i < in.size(); ++i) wrong += back[i] != float16ToFloat(half[i]);
  CHECK(wrong == 0);
  CHECK(back[in.size() - 4] == INFINITY);  // 65520 rounds up
  const float nan = NAN;
  std::uint16_t nanHalf = 0;
  convertFloat32ToFloat16(&nan, &nanHalf, 1);
  CHECK(std::isnan(float16ToFloat(nanHalf)));
}
