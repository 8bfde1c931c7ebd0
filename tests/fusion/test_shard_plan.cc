// The sharded averager's partition on one rank (pure planning): the documented example, every
// element of every tensor owned by exactly one rank for 1-9 ranks (tensors smaller than the rank
// count, counts not divisible by it, empty tensors, device alignment padding), each rank's part of
// a bucket exactly the all-reduce's chunk (ChunkLayout), its runs in the padded array inside its
// block of ceil(C / N), when a bucket can be reduce-scattered and gathered in place, and the hash.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "src/averager/bucket_plan.h"
#include "src/averager/shard_plan.h"

using namespace ringsync;
using namespace ringsync::detail;

namespace {

constexpr BucketPlanLimits kLimits{1024, 256};  // 256 / 64 float32 elements

// Tensors of the given counts, back to back in one arena (`gap` = 0) or with a gap after each.
struct Arena {
  Arena(const std::vector<std::size_t>& counts, std::size_t gap, bool onDevice = false) {
    std::size_t total = 0;
    for (std::size_t c : counts) total += c + gap;
    storage.resize(total + 1);
    std::size_t offset = 0;
    for (std::size_t c : counts) {
      specs.push_back({storage.data() + offset, c, DataType::kFloat32, onDevice && c > 0});
      offset += c + gap;
    }
  }
  std::vector<float> storage;
  std::vector<GradientSpec> specs;
};

// "" when every element of every tensor has exactly one owner, each rank's elements of a bucket are
// exactly the all-reduce's chunk, and their runs land in the rank's block of the padded array at
// the chunk's order; else what is wrong.
std::string checkPartition(const std::vector<Bucket>& buckets, const ShardPlan& plan) {
  const int n = plan.ranks();
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const Bucket& bucket = buckets[b];
    const ChunkLayout cut(bucket.count, n);  // the all-reduce's
    if (plan.block(b) != (bucket.count + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n))
      return "bucket " + std::to_string(b) + ": block " + std::to_string(plan.block(b));
    for (const BucketMember& m : bucket.members) {
      std::vector<int> owners(m.count, 0);
      for (int r = 0; r < n; ++r) {
        const ShardRange own = plan.owned(m.gradient, r);
        if (own.begin > own.end || own.end > m.count) return "tensor " + std::to_string(m.gradient) + ": bad range";
        for (std::size_t i = own.begin; i < own.end; ++i) {
          ++owners[i];
          const std::size_t fused = m.offset + i;
          if (fused < cut.begin(r) || fused >= cut.begin(r) + cut.length(r))
            return "tensor " + std::to_string(m.gradient) + " element " + std::to_string(i) + " is not in chunk " +
                   std::to_string(r);
        }
        std::string wrong;
        plan.forEachRun(m, b, own, [&](std::size_t i, std::size_t padded, std::size_t length) {
          const std::size_t want = static_cast<std::size_t>(r) * plan.block(b) + (m.offset + i - cut.begin(r));
          if (padded != want || padded + length > (static_cast<std::size_t>(r) + 1) * plan.block(b))
            wrong = "tensor " + std::to_string(m.gradient) + " run at " + std::to_string(i) + " lands at " +
                    std::to_string(padded) + ", not " + std::to_string(want);
        });
        if (!wrong.empty()) return wrong;
      }
      for (std::size_t i = 0; i < m.count; ++i)
        if (owners[i] != 1)
          return "tensor " + std::to_string(m.gradient) + " element " + std::to_string(i) + " has " +
                 std::to_string(owners[i]) + " owners at " + std::to_string(n) + " ranks";
    }
  }
  std::size_t owned = 0;
  for (int r = 0; r < n; ++r) owned += plan.ownedElements(r);
  std::size_t elements = 0;
  for (const Bucket& b : buckets)
    for (const BucketMember& m : b.members) elements += m.count;
  if (owned != elements) return "owned elements " + std::to_string(owned) + " != " + std::to_string(elements);
  return "";
}

}  // namespace

TEST_CASE("shard plan: the header's example (C = 10, N = 4)", "[fusion][shard]") {
  Arena arena({5, 4, 1}, 1);  // one bucket: tensor 0 at 0..4, 1 at 5..8, 2 at 9
  const auto buckets = planBuckets(arena.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  const ShardPlan plan(buckets, arena.specs, 4);
  CHECK(plan.block(0) == 3);
  CHECK(plan.paddedCount(0) == 12);
  CHECK(plan.chunk(0, 2).begin == 6);  // chunks of 3, 3, 2, 2: the all-reduce's cut
  CHECK(plan.chunk(0, 2).count == 2);
  CHECK(plan.owned(0, 0) == ShardRange{0, 3});
  CHECK(plan.owned(0, 1) == ShardRange{3, 5});
  CHECK(plan.owned(0, 2).empty());
  CHECK(plan.owned(1, 1) == ShardRange{0, 1});
  CHECK(plan.owned(1, 2) == ShardRange{1, 3});
  CHECK(plan.owned(1, 3) == ShardRange{3, 4});
  CHECK(plan.owned(2, 3) == ShardRange{0, 1});  // smaller than N: rank 3's alone
  for (int r = 0; r < 3; ++r) CHECK(plan.owned(2, r).empty());
  CHECK(plan.ownedElements(0) == 3);
  CHECK(plan.ownedElements(2) == 2);
  CHECK(plan.ownedElements(3) == 2);
  // Tensor 1 in the padded array: its element 0 in block 1 (at 5), 1..2 in block 2 (6, 7), 3 in block 3 (9).
  std::vector<std::size_t> runs;
  plan.forEachRun(buckets[0].members[1], 0, {0, 4}, [&](std::size_t i, std::size_t padded, std::size_t length) {
    runs.insert(runs.end(), {i, padded, length});
  });
  CHECK(runs == std::vector<std::size_t>{0, 5, 1, 1, 6, 2, 3, 9, 1});
}

TEST_CASE("shard plan: every element has exactly one owner, 1 to 9 ranks", "[fusion][shard]") {
  std::vector<std::size_t> tiny;
  for (std::size_t g = 0; g < 90; ++g) tiny.push_back(g % 4);  // 0..3: smaller than most rank counts
  const std::vector<std::vector<std::size_t>> layouts = {
      {1}, {2, 1, 3}, {7, 0, 9, 3, 0}, {1000, 5, 4099, 1, 17}, {256, 256, 255, 257}, tiny, {0, 0}};
  for (int n = 1; n <= 9; ++n)
    for (const auto& counts : layouts)
      for (std::size_t gap : {std::size_t{0}, std::size_t{1}})
        for (bool onDevice : {false, true}) {
          Arena arena(counts, gap, onDevice);
          const auto buckets = planBuckets(arena.specs, kLimits);
          const ShardPlan plan(buckets, arena.specs, n);
          INFO("n=" << n << " tensors=" << counts.size() << " gap=" << gap << " device=" << onDevice);
          CHECK(checkPartition(buckets, plan) == "");
        }
}

TEST_CASE("shard plan: in place only back to back and without padding", "[fusion][shard]") {
  Arena packed({6, 6}, 0);  // one bucket of 12 elements, back to back
  const auto buckets = planBuckets(packed.specs, kLimits);
  REQUIRE(buckets.size() == 1);
  for (int n : {1, 2, 3, 4, 6, 12}) {
    const ShardPlan plan(buckets, packed.specs, n);
    CHECK(plan.reduceScatterInPlace(0));
    CHECK(plan.gatherInPlace(0));
    CHECK(plan.parameterSpan(0) == packed.specs[0].data);
  }
  for (int n : {5, 7, 8, 13}) {  // 12 is not a multiple: the padding needs the runner's buffer
    const ShardPlan plan(buckets, packed.specs, n);
    CHECK_FALSE(plan.reduceScatterInPlace(0));
    CHECK_FALSE(plan.gatherInPlace(0));
  }
  // Gradients back to back, parameters not (and the other way round): each side on its own.
  Arena separate({6, 6}, 1);
  const ShardPlan mixed(buckets, separate.specs, 2);
  CHECK(mixed.reduceScatterInPlace(0));
  CHECK_FALSE(mixed.gatherInPlace(0));
  CHECK(mixed.parameterSpan(0) == nullptr);
  const auto separateBuckets = planBuckets(separate.specs, kLimits);
  const ShardPlan other(separateBuckets, packed.specs, 2);
  CHECK_FALSE(other.reduceScatterInPlace(0));
  CHECK(other.gatherInPlace(0));
}

TEST_CASE("shard plan: the hash changes with the rank count and the layout", "[fusion][shard]") {
  Arena a({5, 3, 2}, 1), b({5, 4, 2}, 1);
  const auto bucketsA = planBuckets(a.specs, kLimits), bucketsB = planBuckets(b.specs, kLimits);
  CHECK(ShardPlan(bucketsA, a.specs, 4).hash() == ShardPlan(bucketsA, a.specs, 4).hash());
  CHECK(ShardPlan(bucketsA, a.specs, 4).hash() != ShardPlan(bucketsA, a.specs, 3).hash());
  CHECK(ShardPlan(bucketsA, a.specs, 4).hash() != ShardPlan(bucketsB, b.specs, 4).hash());
}
