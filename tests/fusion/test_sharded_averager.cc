// ShardedGradientAverager on 1-4 ranks: after synchronize() each rank's shard of every gradient
// holds the exact closed-form average (or sum) at every bucket boundary (tensors smaller than the
// rank count, counts not divisible by it, empty tensors, mixed types); after the gather every
// rank holds the same full parameters, bit for bit, whatever stale values it had; with and
// without overlap, gathered all at once or tensor by tensor; in place where the layout allows,
// fp16 on the wire for the reduce-scatter only; the step's life cycle and its argument errors.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "fusion_model.h"

using namespace ringsync;
using Catch::Matchers::Contains;
using test::Layer;
using test::Model;

namespace {

GradientAveragerOptions smallBuckets(bool overlap, ReduceOp op = ReduceOp::kAvg) {
  GradientAveragerOptions options;
  options.bucketBytes = 1024;  // 256 float32
  options.firstBucketBytes = 256;
  options.overlap = overlap;
  options.op = op;
  return options;
}

std::vector<ShardRange> shards(const ShardedGradientAverager& averager) {
  std::vector<ShardRange> out;
  for (std::size_t i = 0; i < averager.gradientCount(); ++i) out.push_back(averager.shard(i));
  return out;
}

// How a step's parameters are gathered: all at once, or each waited for in forward order while
// the later ones are still being marked.
enum class Gather { kAll, kEach };

// One step: fill, mark in backward order, synchronize, check the shards; the "update" copies the
// averaged shard into the parameters (stale bytes elsewhere), then the gather; returns "" or the
// first wrong element.
std::string step(Communicator& comm, ShardedGradientAverager& averager, Model& grads, Model& params, int s, ReduceOp op,
                 Gather gather) {
  grads.fill(comm.rank(), s, op);
  params.scramble(static_cast<std::uint8_t>(0x5a + comm.rank() + s));
  for (std::size_t g = grads.size(); g-- > 0;) averager.markReady(g);
  averager.synchronize();
  const std::vector<ShardRange> own = shards(averager);
  // A wrong shard is reported after the gather, which every rank takes whatever it found.
  const std::string wrongShard = grads.check(comm.size(), s, op, &own);
  // Gather::kEach: buckets are gathered in the reverse of their launch order (the bucket of tensor
  // 0 first); as soon as the next one in that order has all its parameters marked, its tensors are
  // waited for, while the later ones are still being updated.
  const std::vector<std::size_t> bucketOf = averager.bucketAssignment();
  std::vector<std::size_t> unmarked(averager.bucketCount(), 0);
  for (std::size_t b : bucketOf) ++unmarked[b];
  std::size_t nextGather = averager.bucketCount();  // buckets >= this one were waited for
  for (std::size_t g = 0; g < params.size(); ++g) {
    params.copyRange(grads, g, own[g]);
    averager.markUpdated(g);
    --unmarked[bucketOf[g]];
    for (; gather == Gather::kEach && nextGather > 0 && unmarked[nextGather - 1] == 0; --nextGather)
      for (std::size_t t = 0; t < params.size(); ++t)
        if (bucketOf[t] == nextGather - 1) averager.waitForParameter(t);
  }
  averager.gatherParameters();
  if (!wrongShard.empty()) return "step " + std::to_string(s) + " gradient shard: " + wrongShard;
  const std::string wrong = params.check(comm.size(), s, op);
  return wrong.empty() ? "" : "step " + std::to_string(s) + " gathered parameters: " + wrong;
}

std::vector<std::vector<Layer>> layouts(int n) {
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<Layer> tiny;
  for (std::size_t g = 0; g < 120; ++g) tiny.push_back({DataType::kFloat32, g % 4});
  return {
      test::floatLayers({10, 256, 20, 256, 256, 5}),
      test::floatLayers({3, 1000, 7, 4099, 1, 5000}),
      tiny,
      test::floatLayers({0, 5, 0, 0, 300, 0}),
      test::floatLayers({0, 0}),
      {},
      test::floatLayers({1, un - 1, un, un + 1, 1021, 2}),
      {{DataType::kFloat32, 40},
       {DataType::kFloat64, 33},
       {DataType::kInt32, 17},
       {DataType::kFloat16, 129},
       {DataType::kBFloat16, 65},
       {DataType::kInt8, 300},
       {DataType::kUInt8, 7},
       {DataType::kInt64, 1},
       {DataType::kUInt32, 2},
       {DataType::kUInt64, 3},
       {DataType::kFloat32, 0},
       {DataType::kFloat16, 600}},
  };
}

}  // namespace

TEST_CASE("sharded: exact shards and identical gathered parameters at every bucket boundary", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  std::size_t layout = 0;
  for (const std::vector<Layer>& layers : layouts(comm.size())) {
    for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kSum})
      for (bool overlap : {true, false}) {
        INFO("layout " << layout << ", op " << reduceOpName(op) << ", overlap " << overlap);
        Model grads(layers), params(layers);
        ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(overlap, op));
        // Every rank runs every step whatever it finds, so that no peer is left waiting.
        std::string wrong = step(comm, averager, grads, params, 0, op, Gather::kAll);
        const std::string second = step(comm, averager, grads, params, 1, op, Gather::kEach);
        if (wrong.empty()) wrong = second;
        CHECK(wrong == "");
        const std::vector<std::uint8_t> bytes = params.bytes();
        REQUIRE(test::allRanks(wrong.empty() && test::identicalOnAllRanks(bytes.data(), bytes.size())));
      }
    ++layout;
  }
}

TEST_CASE("sharded: the shards partition every tensor; this rank's equal shardOf(rank)", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = static_cast<std::size_t>(comm.size());
  Model grads(test::floatLayers({1, n - 1, n, n + 1, 1021, 2, 7})),
      params(test::floatLayers({1, n - 1, n, n + 1, 1021, 2, 7}));
  ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(true));
  bool ok = true;
  std::size_t mine = 0;
  for (std::size_t g = 0; g < grads.size(); ++g) {
    std::size_t next = 0, count = grads.buffers()[g].count;
    for (int r = 0; r < comm.size(); ++r) {  // ranks own consecutive ranges, in rank order
      const ShardRange own = averager.shardOf(r, g);
      if (own.empty()) continue;
      ok = ok && own.begin == next;
      next = own.end;
    }
    ok = ok && next == count && averager.shard(g) == averager.shardOf(comm.rank(), g);
    if (count > 0)  // an empty tensor's pointer may be null, or shared
      ok = ok && averager.shard(grads.data(g)) == averager.shard(g) &&
           averager.shard(params.data(g)) == averager.shard(g);
    mine += averager.shard(g).count();
  }
  CHECK(averager.shardElements() == mine);
  // Every element is someone's: the sizes add up over the ranks.
  const long long total = test::sumOverRanks(static_cast<long long>(averager.shardElements()));
  REQUIRE(test::allRanks(ok && total == static_cast<long long>(1 + 3 * n + 1021 + 2 + 7)));
}

TEST_CASE("sharded: arenas are reduce-scattered and gathered in place; separate tensors packed", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = static_cast<std::size_t>(comm.size());
  struct Case {
    std::vector<std::size_t> counts;  // one bucket (< 256 floats)
    bool arena;
  };
  // 5n elements back to back: N blocks, no padding; 5n + 1: padded (but on one rank); separate.
  const Case cases[] = {{{2 * n, 3 * n}, true}, {{2 * n, 3 * n + 1}, true}, {{2 * n, 3 * n}, false}};
  for (const Case& c : cases) {
    Model grads(test::floatLayers(c.counts), c.arena), params(test::floatLayers(c.counts), c.arena);
    ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(true));
    REQUIRE(averager.bucketCount() == 1);
    const std::string wrong = step(comm, averager, grads, params, 0, ReduceOp::kAvg, Gather::kAll);
    const std::vector<BucketTiming> timings = averager.lastStepBuckets();
    REQUIRE(timings.size() == 2);
    const std::string want = c.arena && (c.counts[0] + c.counts[1]) % n == 0 ? "in place" : "packed";
    INFO(c.counts[0] << "+" << c.counts[1] << " arena " << c.arena << ": " << wrong << "; paths " << timings[0].path
                     << " / " << timings[1].path << ", want " << want);
    CHECK(std::string(timings[0].collective) == "reduce-scatter");
    CHECK(std::string(timings[1].collective) == "all-gather");
    REQUIRE(test::allRanks(wrong.empty() && timings[0].path == want && timings[1].path == want));
  }
}

TEST_CASE("sharded: float16 on the wire for the reduce-scatter, parameters gathered exactly", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  GradientAveragerOptions options = smallBuckets(true);
  options.compressFp16 = true;
  const float fine = 1.0f + std::ldexp(1.0f, -12);  // not a float16
  std::vector<float> g0(100, fine), g1(1000, fine), p0(100), p1(1000);
  ShardedGradientAverager averager(comm, {{g0.data(), 100, DataType::kFloat32}, {g1.data(), 1000, DataType::kFloat32}},
                                   {{p0.data(), 100, DataType::kFloat32}, {p1.data(), 1000, DataType::kFloat32}},
                                   options);
  averager.averageAll();
  bool ok = true;
  std::vector<float>* grads[] = {&g0, &g1};
  std::vector<float>* params[] = {&p0, &p1};
  for (std::size_t t = 0; t < 2; ++t) {
    const ShardRange own = averager.shard(t);
    for (std::size_t i = own.begin; i < own.end; ++i) {
      ok = ok && (*grads[t])[i] == 1.0f;                    // rounded to float16 on the wire
      (*params[t])[i] = fine + static_cast<float>(i % 64);  // exact in float32, not in float16
    }
  }
  averager.gatherParameters();
  for (std::size_t t = 0; t < 2; ++t)
    for (std::size_t i = 0; i < params[t]->size(); ++i) ok = ok && (*params[t])[i] == fine + static_cast<float>(i % 64);
  const std::vector<BucketTiming> timings = averager.lastStepBuckets();
  for (std::size_t b = 0; b < averager.bucketCount(); ++b) ok = ok && std::string(timings[b].path) == "fp16";
  REQUIRE(test::allRanks(ok));
}

TEST_CASE("sharded: counts, stats and the bytes each rank sends", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t n = static_cast<std::size_t>(comm.size());
  const std::vector<std::size_t> counts = {10, 256, 20, 256, 1000, 5};  // buckets of 1000, 256, 256, 35
  Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
  ShardedGradientAverager sharded(comm, grads.buffers(), params.buffers(), smallBuckets(true));
  GradientAverager replicated(comm, grads.buffers(), smallBuckets(true));
  CHECK(sharded.gradientCount() == 6);
  CHECK(sharded.bucketCount() == 4);
  CHECK(sharded.bucketAssignment() == replicated.bucketAssignment());  // the same fusion
  CHECK(sharded.overlapping());
  std::size_t rs = 0, ar = 0;
  for (std::size_t c : {1000, 256, 256, 35}) {
    rs += (n - 1) * ((c + n - 1) / n) * 8;  // reduce-scatter + all-gather of float32 blocks
    ar += 2 * (n - 1) * c * 4 / n;
  }
  CHECK(sharded.stats().wireBytesPerStep == rs);
  CHECK(replicated.stats().wireBytesPerStep == ar);
  std::string wrong;
  for (int s = 0; s < 3; ++s) {
    const std::string found = step(comm, sharded, grads, params, s, ReduceOp::kAvg, Gather::kAll);
    if (wrong.empty()) wrong = found;
  }
  REQUIRE(test::allRanks(wrong.empty()));
  const GradientAveragerStats stats = sharded.stats();
  CHECK(stats.steps == 3);
  CHECK(stats.buckets == 4);
  const std::vector<BucketTiming> timings = sharded.lastStepBuckets();
  REQUIRE(timings.size() == 8);
  for (std::size_t b = 0; b < 4; ++b) {
    CHECK(std::string(timings[b].collective) == "reduce-scatter");
    CHECK(std::string(timings[4 + b].collective) == "all-gather");
    CHECK(timings[4 + b].bytes == timings[3 - b].bytes);  // gathers in forward order
  }
  CHECK(timings[0].bytes == 1000 * sizeof(float));
  CHECK(comm.callCount() == 0);  // all traffic went through the averager's own duplicate
  REQUIRE(test::allRanks(params.check(comm.size(), 2, ReduceOp::kAvg).empty()));
}

TEST_CASE("sharded: the step's order is enforced, naming what is missing", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  // Tensor 2 (1000) is a bucket of its own, gathered after the bucket of 0 and 1.
  Model grads(test::floatLayers({10, 20, 1000})), params(test::floatLayers({10, 20, 1000}));
  ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(true));
  CHECK_NOTHROW(averager.waitForParameter(2));  // before the first step: the parameters are complete
  CHECK_NOTHROW(averager.gatherParameters());
  CHECK_THROWS_WITH(averager.markUpdated(0), Contains("parameters are marked updated after synchronize()"));
  grads.fill(comm.rank(), 0, ReduceOp::kAvg);
  averager.averageAll();
  CHECK_THROWS_WITH(averager.synchronize(), Contains("reduce-scattered already"));
  averager.markUpdated(2);
  CHECK_THROWS_WITH(averager.markUpdated(2), Contains("parameter 2 was already marked updated"));
  CHECK_THROWS_WITH(averager.waitForParameter(2),
                    Contains("parameter 0 was not marked updated") && Contains("gathered before this one"));
  CHECK_THROWS_WITH(averager.markReady(1), Contains("2 parameters were not marked updated") && Contains("(0, 1)"));
  averager.markUpdated(0);
  CHECK_THROWS_WITH(averager.waitForParameter(0),
                    Contains("parameter 1 was not marked updated") && Contains("gathered with this one"));
  averager.markUpdated(1);
  averager.waitForParameter(1);
  averager.waitForParameter(2);
  // The next step's first markReady ends the gather.
  grads.fill(comm.rank(), 1, ReduceOp::kAvg);
  for (std::size_t g = 3; g-- > 0;) averager.markReady(g);
  averager.synchronize();
  const std::vector<ShardRange> own = shards(averager);
  REQUIRE(test::allRanks(grads.check(comm.size(), 1, ReduceOp::kAvg, &own).empty()));
  averager.gatherParameters();
  CHECK(averager.stats().steps == 2);
}

TEST_CASE("sharded: shard ranges asked for tensors it does not hold", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  Model grads(test::floatLayers({10, 0, 20})), params(test::floatLayers({10, 0, 20}));
  std::vector<float> stranger(10);
  ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(true));
  CHECK_THROWS_WITH(averager.shard(3), Contains("index=3 is out of range (3 tensors registered)"));
  CHECK_THROWS_WITH(averager.shardOf(comm.size(), 0),
                    Contains("rank=" + std::to_string(comm.size()) + " is out of range"));
  CHECK_THROWS_WITH(averager.shardOf(-1, 0), Contains("rank=-1 is out of range"));
  CHECK_THROWS_AS(averager.shard(stranger.data()), InvalidArgument);
  CHECK_THROWS_WITH(averager.shard(static_cast<const float*>(grads.data(0)) + 1),
                    Contains("is not the start of a gradient or parameter this averager holds"));
  CHECK_THROWS_WITH(averager.markUpdated(5), Contains("markUpdated: index=5 is out of range"));
  CHECK_THROWS_WITH(averager.waitForParameter(3), Contains("waitForParameter: index=3 is out of range"));
  CHECK(averager.shard(grads.data(2)) == averager.shard(2));
}

TEST_CASE("sharded: destroyed mid-step, in backward or in the gather, without hanging", "[fusion][shard]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::size_t> counts(64, 100);
  Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
  const double deadline = Options::fromEnvironment().timeoutSeconds;
  for (bool overlap : {true, false})
    for (bool inGather : {false, true}) {
      const auto start = std::chrono::steady_clock::now();
      {
        ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(overlap));
        if (inGather) {
          averager.averageAll();
          for (std::size_t g = 0; g < grads.size() / 2; ++g) averager.markUpdated(g);
        } else {
          for (std::size_t g = grads.size(); g-- > grads.size() / 2;) averager.markReady(g);
        }
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      INFO("overlap " << overlap << " in gather " << inGather << ": " << seconds << " s (deadline " << deadline << ")");
      REQUIRE(test::allRanks(deadline <= 0 || seconds < deadline / 2));
    }
  // The communicator and a new averager still work.
  ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), smallBuckets(true));
  REQUIRE(test::allRanks(step(comm, averager, grads, params, 0, ReduceOp::kAvg, Gather::kEach).empty()));
}
