// ShardedGradientAverager failures on 1-4 ranks: tensor lists or settings that differ between
// ranks (MismatchError on every rank at construction, naming the difference, with every buffer
// untouched: nothing was exchanged), parameters that do not match their gradients (InvalidArgument
// naming the parameter, on one rank or all: the others learn which ranks rejected their
// arguments instead of waiting), a failure inside a reduce-scatter (on every rank; the averager
// goes on), and a peer that never joins the gather (TimeoutError, then AbortedError).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <string>

#include "fusion_model.h"

using namespace ringsync;
using Catch::Matchers::Contains;
using test::Model;

namespace {

GradientAveragerOptions options(bool overlap = true) {
  GradientAveragerOptions o;
  o.bucketBytes = 1024;
  o.firstBucketBytes = 256;
  o.overlap = overlap;
  return o;
}

// Runs `body` and returns the message of the exception of type E it raised ("" if none).
template <typename E, typename Body> std::string messageOf(Body&& body) {
  try {
    body();
  } catch (const E& error) {
    return error.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sharded errors: tensor lists that differ between ranks, before any byte moves", "[fusion][shard][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  if (n == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  {  // one rank registered one tensor fewer
    const std::vector<std::size_t> counts = comm.rank() == 1 ? std::vector<std::size_t>{4, 4, 4, 4, 4}
                                                             : std::vector<std::size_t>{4, 4, 4, 4, 4, 4};
    Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
    grads.fill(comm.rank(), 0, ReduceOp::kAvg);
    params.scramble(0x33);
    const std::vector<std::uint8_t> before = grads.bytes(), paramsBefore = params.bytes();
    const std::string message = messageOf<MismatchError>(
        [&] { ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), options()); });
    INFO(message);
    REQUIRE(test::allRanks(has(message, "ShardedGradientAverager: ranks registered different tensors") &&
                           has(message, "rank 1 registered 5 tensors, rank 0 registered 6") &&
                           grads.bytes() == before && params.bytes() == paramsBefore));
  }
  {  // the last rank's tensor 3 (gradient and parameter) has another count; rank 1's tensor 4 another type
    std::vector<test::Layer> layers = test::floatLayers({7, 8, 9, 120, 10, 11});
    if (comm.rank() == n - 1) layers[3].count = 100;
    if (n > 2 && comm.rank() == 1) layers[4].type = DataType::kInt32;
    Model grads(layers), params(layers);
    const std::string message = messageOf<MismatchError>(
        [&] { ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), options()); });
    INFO(message);
    bool named = has(message, "tensor 3: rank " + std::to_string(n - 1) +
                                  " has count=100 float32, rank 0 has count=120 float32");
    if (n > 2) named = named && has(message, "tensor 4: rank 1 has count=10 int32, rank 0 has count=10 float32");
    REQUIRE(test::allRanks(named));
  }
  {  // settings
    Model grads(test::floatLayers({3, 3})), params(test::floatLayers({3, 3}));
    GradientAveragerOptions o = options();
    if (comm.rank() == 1) o.bucketBytes = 2048;
    const std::string message = messageOf<MismatchError>(
        [&] { ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), o); });
    INFO(message);
    REQUIRE(test::allRanks(has(message, "rank 1 uses bucketBytes=2048") &&
                           has(message, "rank 0 uses bucketBytes=1024") && has(message, "sharded")));
  }
}

TEST_CASE("sharded errors: a parameter that does not match its gradient is named", "[fusion][shard][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> g0(10), g1(20), p0(10), p1(20);
  std::vector<double> wide(20);
  const GradientBuffer grads[] = {{g0.data(), 10, DataType::kFloat32}, {g1.data(), 20, DataType::kFloat32}};
  // On every rank alike: InvalidArgument everywhere, naming it.
  CHECK_THROWS_WITH(ShardedGradientAverager(comm, {grads[0], grads[1]}, {{p0.data(), 10, DataType::kFloat32}}),
                    Contains("1 parameters for 2 gradients"));
  CHECK_THROWS_WITH(ShardedGradientAverager(comm, {grads[0], grads[1]},
                                            {{p0.data(), 10, DataType::kFloat32},
                                             {wide.data(), 20, DataType::kFloat64}}),
                    Contains("parameter 1 (count=20 float64) does not match gradient 1 (count=20 float32)"));
  CHECK_THROWS_WITH(ShardedGradientAverager(comm, {grads[0], grads[1]},
                                            {{p0.data(), 10, DataType::kFloat32},
                                             {g0.data() + 2, 5, DataType::kFloat32}}),
                    Contains("parameter 1 (count=5 float32) does not match"));
  CHECK_THROWS_WITH(ShardedGradientAverager(comm, {grads[0], grads[1]},
                                            {{g1.data(), 10, DataType::kFloat32}, {p1.data(), 20, DataType::kFloat32}}),
                    Contains("gradient 1 and parameter 0 overlap in memory"));
  CHECK_THROWS_WITH(ShardedGradientAverager(comm, {grads[0], grads[1]},
                                            {{nullptr, 10, DataType::kFloat32}, {p1.data(), 20, DataType::kFloat32}}),
                    Contains("parameter 0: data is null with count=10"));
  if (comm.size() == 1) return;
  // On one rank only: that rank names its parameter, the others name that rank; nobody waits.
  const bool culprit = comm.rank() == comm.size() - 1;
  const std::vector<GradientBuffer> params = {{p0.data(), 10, DataType::kFloat32},
                                              {p1.data(), culprit ? 19u : 20u, DataType::kFloat32}};
  std::string invalid, mismatch;
  try {
    ShardedGradientAverager averager(comm, {grads[0], grads[1]}, params, options());
  } catch (const InvalidArgument& error) {
    invalid = error.what();
  } catch (const MismatchError& error) {
    mismatch = error.what();
  }
  INFO(invalid << mismatch);
  const std::string last = std::to_string(comm.size() - 1);
  REQUIRE(test::allRanks(culprit ? has(invalid, "parameter 1 (count=19 float32) does not match gradient 1")
                                 : has(mismatch, "rank(s) " + last + " rejected their arguments")));
  // The communicator is still usable: nothing was left half-sent.
  Model grads2(test::floatLayers({5, 6})), params2(test::floatLayers({5, 6}));
  ShardedGradientAverager averager(comm, grads2.buffers(), params2.buffers(), options());
  grads2.fill(comm.rank(), 0, ReduceOp::kAvg);
  averager.averageAll();
  averager.gatherParameters();
  REQUIRE(test::allRanks(true));
}

TEST_CASE("sharded errors: a failure inside a reduce-scatter surfaces in synchronize on every rank",
          "[fusion][shard][errors]") {
  // RINGSYNC_CHECK_FINITE: a NaN in one rank's gradient makes that bucket's reduce-scatter raise
  // NonFiniteError on every rank, before any data moved; the averager goes on with the next step.
  Options o = Options::fromEnvironment();
  o.checkFinite = true;
  Communicator comm(MPI_COMM_WORLD, o);
  const int culprit = comm.size() - 1;
  for (bool overlap : {true, false}) {
    const std::vector<std::size_t> counts = {50, 300, 20, 5000, 60};
    Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
    ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), options(overlap));
    grads.fill(comm.rank(), 0, ReduceOp::kAvg);
    if (comm.rank() == culprit) static_cast<float*>(grads.data(1))[7] = NAN;
    const std::string message = messageOf<NonFiniteError>([&] { averager.averageAll(); });
    INFO("overlap " << overlap << ": " << message);
    const bool raised = has(message, std::to_string(culprit));
    // No gather is due after a failed synchronize(): the next step starts at once.
    CHECK_NOTHROW(averager.gatherParameters());
    grads.fill(comm.rank(), 1, ReduceOp::kAvg);
    averager.averageAll();
    std::vector<ShardRange> own;
    for (std::size_t g = 0; g < counts.size(); ++g) own.push_back(averager.shard(g));
    const std::string wrong = grads.check(comm.size(), 1, ReduceOp::kAvg, &own);
    averager.gatherParameters();
    REQUIRE(test::allRanks(raised && wrong.empty()));
  }
}

TEST_CASE("sharded errors: a peer that never joins the gather times out; then the averager refuses",
          "[fusion][shard][errors]") {
  Options o = Options::fromEnvironment();
  o.timeoutSeconds = 2;
  Communicator comm(MPI_COMM_WORLD, o);
  if (comm.size() == 1) {
    SUCCEED("a single rank has no peer to wait for");
    return;
  }
  const std::vector<std::size_t> counts = {50, 300, 20, 60};
  Model grads(test::floatLayers(counts)), params(test::floatLayers(counts));
  bool ok = true;
  std::string message;
  {
    ShardedGradientAverager averager(comm, grads.buffers(), params.buffers(), options());
    averager.averageAll();  // every rank reduce-scatters
    if (comm.rank() == 0) {
      // Rank 0 gathers alone; the others never mark their parameters.
      const auto start = std::chrono::steady_clock::now();
      message = messageOf<TimeoutError>([&] { averager.gatherParameters(); });
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ok = !message.empty() && seconds < o.timeoutSeconds + 5;
      ok = ok && has(messageOf<AbortedError>([&] { averager.markReady(0); }), "cannot be used any more");
    }
  }
  INFO(message);
  REQUIRE(test::allRanks(ok && (comm.rank() != 0 || has(message, "timed out"))));
}
