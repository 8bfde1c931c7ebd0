// GradientAverager on 1-4 ranks: exact averages and sums at every bucket boundary (a tensor at the
// threshold, larger than a bucket, many tiny ones, empty ones, mixed types), readiness in any order,
// the same bits with and without overlap, arenas all-reduced in place next to ranks that pack,
// fp16 on the wire, and the life cycle (steps, stats, destruction mid-step, argument errors).
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "fusion_model.h"
#include "src/averager/overlap_policy.h"

using namespace ringsync;
using test::Layer;
using test::Model;

namespace {

constexpr std::size_t kBucketBytes = 1024;  // 256 float32
constexpr std::size_t kFirstBucketBytes = 256;

GradientAveragerOptions smallBuckets(bool overlap, ReduceOp op = ReduceOp::kAvg) {
  GradientAveragerOptions options;
  options.bucketBytes = kBucketBytes;
  options.firstBucketBytes = kFirstBucketBytes;
  options.overlap = overlap;
  options.op = op;
  return options;
}

struct Layout {
  const char* name;
  std::vector<Layer> layers;
};

std::vector<Layout> layouts(int n) {
  const std::size_t un = static_cast<std::size_t>(n);
  std::vector<Layer> tiny;
  for (std::size_t g = 0; g < 300; ++g) tiny.push_back({DataType::kFloat32, 1 + g % 3});
  return {
      {"tensors exactly at the threshold", test::floatLayers({10, 256, 20, 256, 256, 5})},
      {"tensors larger than a bucket", test::floatLayers({3, 1000, 7, 4099, 1, 5000})},
      {"many tiny tensors", tiny},
      {"zero-sized tensors", test::floatLayers({0, 5, 0, 0, 300, 0})},
      {"only zero-sized tensors", test::floatLayers({0, 0})},
      {"no gradients", {}},
      {"counts around the rank count", test::floatLayers({1, un - 1, un, un + 1, 1021, 2})},
      {"mixed types",
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
        {DataType::kFloat16, 600}}},
  };
}

// Runs `steps` steps marking in backward order; returns "" or the first wrong element. Every rank
// runs every step whatever it finds, so that no peer is left waiting.
std::string runSteps(Communicator& comm, Model& model, const GradientAveragerOptions& options, int steps) {
  GradientAverager averager(comm, model.buffers(), options);
  std::string firstWrong;
  for (int step = 0; step < steps; ++step) {
    model.fill(comm.rank(), step, options.op);
    for (std::size_t g = model.size(); g-- > 0;) averager.markReady(g);
    averager.synchronize();
    const std::string wrong = model.check(comm.size(), step, options.op);
    if (firstWrong.empty() && !wrong.empty()) firstWrong = "step " + std::to_string(step) + ": " + wrong;
  }
  return firstWrong;
}

}  // namespace

TEST_CASE("averager: exact results at every bucket boundary, the same with and without overlap", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  for (const Layout& layout : layouts(comm.size()))
    for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kSum}) {
      INFO(layout.name << ", op " << reduceOpName(op));
      Model overlapped(layout.layers), sequential(layout.layers);
      const std::string wrongOverlapped = runSteps(comm, overlapped, smallBuckets(true, op), 2);
      const std::string wrongSequential = runSteps(comm, sequential, smallBuckets(false, op), 2);
      CHECK(wrongOverlapped == "");
      CHECK(wrongSequential == "");
      const bool same = overlapped.bytes() == sequential.bytes();
      const bool identical = test::identicalOnAllRanks(overlapped.bytes().data(), overlapped.bytes().size());
      REQUIRE(test::allRanks(wrongOverlapped.empty() && wrongSequential.empty() && same && identical));
    }
}

TEST_CASE("averager: overlap is on where MPI_THREAD_MULTIPLE is provided", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  Model model(test::floatLayers({4, 5}));
  REQUIRE(comm.mpiThreadLevel() == MPI_THREAD_MULTIPLE);  // this binary's main asks for it
  CHECK(GradientAverager(comm, model.buffers(), smallBuckets(true)).overlapping());
  CHECK_FALSE(GradientAverager(comm, model.buffers(), smallBuckets(false)).overlapping());
}

TEST_CASE("averager: overlap unset, host buckets overlap across nodes or with two CPUs per rank", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  Model model(test::floatLayers({4, 5}));
  GradientAveragerOptions unset = smallBuckets(true);
  unset.overlap.reset();
  REQUIRE(comm.mpiThreadLevel() == MPI_THREAD_MULTIPLE);  // this binary's main asks for it
  const bool gains = comm.localSize() < comm.size() || detail::cpusOfThisRank(comm.localSize()) >= 2;
  GradientAverager averager(comm, model.buffers(), unset);
  INFO("ranks on this node " << comm.localSize() << " of " << comm.size() << ", CPUs of this rank "
                             << detail::cpusOfThisRank(comm.localSize()));
  CHECK(averager.overlapping() == gains);
  model.fill(comm.rank(), 0, ReduceOp::kAvg);
  averager.averageAll();
  const std::string wrong = model.check(comm.size(), 0, ReduceOp::kAvg);
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
}

TEST_CASE("averager: gradients marked ready in any order, differently on every rank", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<Layer> layers = test::floatLayers({300, 1, 2, 3, 256, 77, 0, 1000, 64, 65, 63});
  layers.push_back({DataType::kFloat64, 100});
  layers.push_back({DataType::kInt32, 50});
  for (bool overlap : {true, false}) {
    Model model(layers);
    GradientAverager averager(comm, model.buffers(), smallBuckets(overlap));
    std::mt19937 random(static_cast<unsigned>(1234 + 7919 * comm.rank()));
    std::string wrong;
    for (int step = 0; step < 4; ++step) {
      model.fill(comm.rank(), step, ReduceOp::kAvg);
      std::vector<std::size_t> order(model.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), random);
      if (step == 3) {
        // averageAll() marks whatever is left.
        for (std::size_t k = 0; k < order.size() / 2; ++k) averager.markReady(order[k]);
        averager.averageAll();
      } else {
        for (std::size_t g : order) averager.markReady(g);
        averager.synchronize();
      }
      if (wrong.empty()) wrong = model.check(comm.size(), step, ReduceOp::kAvg);
    }
    INFO("overlap " << overlap << ": " << wrong);
    REQUIRE(test::allRanks(wrong.empty()));
  }
}

TEST_CASE("averager: an arena is all-reduced in place and agrees with ranks that pack", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  const auto layers = test::floatLayers({100, 3, 0, 50, 7, 600, 20, 20});
  // Even ranks keep their gradients back to back in one arena, odd ranks in separate buffers:
  // the fused element order must not depend on that.
  Model model(layers, comm.rank() % 2 == 0);
  std::string wrong = runSteps(comm, model, smallBuckets(true), 2);
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
  Model allArena(layers, true);
  wrong = runSteps(comm, allArena, smallBuckets(false), 1);
  REQUIRE(test::allRanks(wrong.empty()));
}

TEST_CASE("averager: buckets of ring size, and tensors far larger than a bucket", "[fusion]") {
  // The ring forced (the direct exchange would carry 64 KiB buckets by default): 64 KiB buckets of
  // 4 KiB tensors go over the ring packed; the 100003-element tensor is all-reduced in place.
  Options ringOnly;
  ringOnly.algorithm = Algorithm::kRing;
  Communicator comm(MPI_COMM_WORLD, ringOnly);
  std::vector<std::size_t> counts(40, 1000);
  counts.push_back(100003);
  counts.push_back(17);
  Model model(test::floatLayers(counts));
  GradientAveragerOptions options;
  options.bucketBytes = 64 * 1024;
  options.firstBucketBytes = 16 * 1024;
  const std::string wrong = runSteps(comm, model, options, 2);
  INFO(wrong);
  REQUIRE(test::allRanks(wrong.empty()));
}

TEST_CASE("averager: float16 on the wire for float32 gradients", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  const std::vector<Layer> layers = {{DataType::kFloat32, 500}, {DataType::kFloat64, 10}, {DataType::kFloat32, 3000}};
  for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kSum}) {
    GradientAveragerOptions options = smallBuckets(true, op);
    options.compressFp16 = true;
    // Small integers survive float16 exactly, and so do their sums and averages here.
    Model model(layers);
    const std::string wrong = runSteps(comm, model, options, 1);
    INFO(wrong);
    REQUIRE(test::allRanks(wrong.empty()));
  }
  // 1 + 2^-12 is not a float16: compressed it arrives as 1, uncompressed as itself; float64 is
  // never compressed.
  for (bool compress : {true, false}) {
    std::vector<float> a(100, 1.0f + std::ldexp(1.0f, -12)), b(1000, 1.0f + std::ldexp(1.0f, -12));
    std::vector<double> c(10, 1.0 + std::ldexp(1.0, -40));
    GradientAveragerOptions options = smallBuckets(true);
    options.compressFp16 = compress;
    GradientAverager averager(comm,
                              {{a.data(), a.size(), DataType::kFloat32},
                               {c.data(), c.size(), DataType::kFloat64},
                               {b.data(), b.size(), DataType::kFloat32}},
                              options);
    averager.averageAll();
    const float want = compress ? 1.0f : 1.0f + std::ldexp(1.0f, -12);
    const bool ok = std::all_of(a.begin(), a.end(), [&](float v) { return v == want; }) &&
                    std::all_of(b.begin(), b.end(), [&](float v) { return v == want; }) &&
                    std::all_of(c.begin(), c.end(), [](double v) { return v == 1.0 + std::ldexp(1.0, -40); });
    INFO("compressFp16=" << compress);
    REQUIRE(test::allRanks(ok));
  }
}

TEST_CASE("averager: bucket assignment, counts and stats", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  Model model(test::floatLayers({10, 256, 20, 256, 1000, 5}));
  GradientAverager averager(comm, model.buffers(), smallBuckets(true));
  CHECK(averager.gradientCount() == 6);
  CHECK(averager.bucketCount() == 4);
  CHECK(averager.bucketAssignment() == std::vector<std::size_t>{3, 2, 3, 1, 0, 3});
  CHECK(averager.stats().buckets == 4);
  CHECK(averager.stats().steps == 0);
  for (int step = 0; step < 3; ++step) {
    model.fill(comm.rank(), step, ReduceOp::kAvg);
    averager.averageAll();
  }
  const GradientAveragerStats stats = averager.stats();
  CHECK(stats.steps == 3);
  CHECK(stats.lastSynchronizeSeconds >= 0);
  CHECK(stats.totalSynchronizeSeconds >= stats.lastSynchronizeSeconds);
  CHECK(comm.callCount() == 0);  // all traffic went through the averager's own duplicate
  // Where the last step's time went, per bucket in launch order: the tensors of a bucket's worth
  // or more lie alone in theirs (in place); bucket 3's three small separate tensors are too small
  // for the split all-reduce, so the core packed them.
  const std::vector<BucketTiming> timings = averager.lastStepBuckets();
  REQUIRE(timings.size() == 4);
  CHECK(timings[0].bytes == 1000 * sizeof(float));
  CHECK(timings[0].gradients == 1);
  CHECK(std::string(timings[0].path) == "in place");
  CHECK(timings[3].bytes == (10 + 20 + 5) * sizeof(float));
  CHECK(timings[3].gradients == 3);
  CHECK(std::string(timings[3].path) == "packed");
  for (const BucketTiming& t : timings) CHECK((t.exchangeSeconds >= 0 && t.packSeconds == 0 && t.unpackSeconds == 0));
  REQUIRE(test::allRanks(model.check(comm.size(), 2, ReduceOp::kAvg).empty()));
}

TEST_CASE("averager: destroyed mid-step, with buckets in flight or never started", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<std::size_t> counts(64, 100);
  Model model(test::floatLayers(counts));
  // A destruction that waited for a bucket some peer never started would end only at the
  // deadline (the averager's own communicator times out, silently, inside the destructor).
  const double deadline = Options::fromEnvironment().timeoutSeconds;
  for (bool overlap : {true, false}) {
    const auto start = std::chrono::steady_clock::now();
    {
      GradientAverager averager(comm, model.buffers(), smallBuckets(overlap));
      // Every rank completes the same buckets (the later half of the list) and then drops the
      // averager: those buckets finish, the others never start, and nothing hangs or throws.
      for (std::size_t g = model.size(); g-- > model.size() / 2;) averager.markReady(g);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("overlap " << overlap << ": destroying the averager took " << seconds << " s (deadline " << deadline << " s)");
    REQUIRE(test::allRanks(deadline <= 0 || seconds < deadline / 2));
    // The communicator and a new averager still work.
    model.fill(comm.rank(), 0, ReduceOp::kAvg);
    const std::string wrong = runSteps(comm, model, smallBuckets(overlap), 1);
    REQUIRE(test::allRanks(wrong.empty()));
  }
}

TEST_CASE("averager: bad arguments raise InvalidArgument naming them", "[fusion]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(10), b(10);
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(GradientAverager(comm, {{a.data(), 10, DataType::kFloat32}, {nullptr, 3, DataType::kFloat32}}),
                    Contains("gradient 1") && Contains("null"));
  CHECK_THROWS_WITH(GradientAverager(comm, {{a.data(), 10, DataType::kFloat32}, {a.data() + 5, 3, DataType::kFloat32}}),
                    Contains("gradients 0 and 1 overlap"));
  GradientAveragerOptions maxOp;
  maxOp.op = ReduceOp::kMax;
  CHECK_THROWS_AS(GradientAverager(comm, {{a.data(), 10, DataType::kFloat32}}, maxOp), InvalidArgument);
  // Empty tensors may share any pointer, null included.
  CHECK_NOTHROW(GradientAverager(
      comm, {{nullptr, 0, DataType::kFloat32}, {a.data(), 0, DataType::kFloat32}, {a.data(), 10, DataType::kFloat32}}));

  GradientAverager averager(comm, {{a.data(), 10, DataType::kFloat32}, {b.data(), 10, DataType::kFloat32}});
  CHECK_THROWS_WITH(averager.markReady(2), Contains("index=2") && Contains("2 gradients"));
  averager.markReady(1);
  CHECK_THROWS_WITH(averager.markReady(1), Contains("gradient 1 was already marked"));
  CHECK_THROWS_WITH(averager.synchronize(), Contains("1 gradients were not marked ready") && Contains("(0)"));
  averager.markReady(0);
  averager.synchronize();  // the step completes once everything is marked
  averager.averageAll();
  CHECK(averager.stats().steps == 2);
}
