// GradientAverager failures on 1-4 ranks: gradient lists that differ between ranks (MismatchError
// on every rank, naming the difference, at the first call whichever call that is), an error raised
// inside a bucket on the progress thread (surfaces in synchronize() on the caller's thread; the
// averager goes on), and a peer that never joins (TimeoutError, then AbortedError, and a prompt
// destructor).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <string>

#include "fusion_model.h"

using namespace ringsync;
using Catch::Matchers::Contains;
using test::Model;

namespace {

GradientAveragerOptions withOverlap(bool overlap) {
  GradientAveragerOptions options;
  options.bucketBytes = 1024;
  options.firstBucketBytes = 256;
  options.overlap = overlap;
  return options;
}

// Runs `call` and returns the MismatchError's message ("" if it did not throw one).
template <typename Call> std::string mismatchOf(Call&& call) {
  try {
    call();
  } catch (const MismatchError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("averager errors: a different number of gradients on one rank", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  const bool odd = comm.rank() == 1;
  Model model(
      test::floatLayers(odd ? std::vector<std::size_t>{4, 4, 4, 4, 4} : std::vector<std::size_t>{4, 4, 4, 4, 4, 4}));
  for (bool overlap : {true, false}) {
    GradientAverager averager(comm, model.buffers(), withOverlap(overlap));
    // The first call is markReady here, on every rank.
    const std::string message = mismatchOf([&] { averager.markReady(0); });
    INFO(message);
    const bool named = message.find("rank 1 registered 5 gradients, rank 0 registered 6") != std::string::npos;
    // Later calls keep refusing, without another collective.
    const bool again = !mismatchOf([&] { averager.averageAll(); }).empty();
    REQUIRE(test::allRanks(named && again));
  }
}

TEST_CASE("averager errors: one gradient's count or type differs", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  if (n == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  std::vector<test::Layer> layers = test::floatLayers({7, 8, 9, 120, 10, 11});
  if (comm.rank() == n - 1) layers[3].count = 100;                   // last rank: count of gradient 3
  if (n > 2 && comm.rank() == 1) layers[4].type = DataType::kInt32;  // rank 1: type of gradient 4
  Model model(layers);
  GradientAverager averager(comm, model.buffers(), withOverlap(true));
  const std::string message = mismatchOf([&] { averager.synchronize(); });  // first call: synchronize
  INFO(message);
  bool named = message.find("gradient 3: rank " + std::to_string(n - 1) +
                            " has count=100 float32, rank 0 has count=120 float32") != std::string::npos;
  if (n > 2)
    named = named &&
            message.find("gradient 4: rank 1 has count=10 int32, rank 0 has count=10 float32") != std::string::npos;
  REQUIRE(test::allRanks(named));
}

TEST_CASE("averager errors: a rank with no gradients and different settings", "[fusion][errors]") {
  Communicator comm(MPI_COMM_WORLD);
  if (comm.size() == 1) {
    SUCCEED("one rank cannot disagree with itself");
    return;
  }
  {
    // Rank 0 registered nothing: its first call is averageAll() -> synchronize(); the others'
    // first call is markReady. They still meet in the check.
    Model model(test::floatLayers(comm.rank() == 0 ? std::vector<std::size_t>{} : std::vector<std::size_t>{3, 3}));
    GradientAverager averager(comm, model.buffers());
    const std::string message = mismatchOf([&] { averager.averageAll(); });
    INFO(message);
    REQUIRE(test::allRanks(message.find("rank 1 registered 2 gradients, rank 0 registered 0") != std::string::npos));
  }
  {
    Model model(test::floatLayers({3, 3}));
    GradientAveragerOptions options = withOverlap(true);
    if (comm.rank() == 1) options.bucketBytes = 2048;
    GradientAverager averager(comm, model.buffers(), options);
    const std::string message = mismatchOf([&] { averager.averageAll(); });
    INFO(message);
    REQUIRE(test::allRanks(message.find("rank 1 uses bucketBytes=2048") != std::string::npos &&
                           message.find("rank 0 uses bucketBytes=1024") != std::string::npos));
  }
}

TEST_CASE("averager errors: a failure inside a bucket surfaces in synchronize on every rank", "[fusion][errors]") {
  // RINGSYNC_CHECK_FINITE: a NaN in one rank's gradient makes that bucket's all-reduce raise
  // NonFiniteError on every rank. With overlap it is raised on the progress thread.
  Options options = Options::fromEnvironment();
  options.checkFinite = true;
  Communicator comm(MPI_COMM_WORLD, options);
  const int culprit = comm.size() - 1;
  for (bool overlap : {true, false}) {
    Model model(test::floatLayers({50, 300, 20, 5000, 60}));
    GradientAverager averager(comm, model.buffers(), withOverlap(overlap));
    model.fill(comm.rank(), 0, ReduceOp::kAvg);
    if (comm.rank() == culprit) static_cast<float*>(model.data(1))[7] = NAN;
    std::string message;
    try {
      averager.averageAll();
    } catch (const NonFiniteError& error) {
      message = error.what();
    }
    INFO("overlap " << overlap << ": " << message);
    const bool raised = message.find(std::to_string(culprit)) != std::string::npos;
    // Found from the fingerprints before any data moved: every rank is still in step, so the
    // averager goes on with the next step.
    model.fill(comm.rank(), 1, ReduceOp::kAvg);
    averager.averageAll();
    const std::string wrong = model.check(comm.size(), 1, ReduceOp::kAvg);
    REQUIRE(test::allRanks(raised && wrong.empty()));
  }
}

TEST_CASE("averager errors: a peer that never joins times out; then the averager refuses", "[fusion][errors]") {
  Options options = Options::fromEnvironment();
  options.timeoutSeconds = 2;
  Communicator comm(MPI_COMM_WORLD, options);
  if (comm.size() == 1) {
    SUCCEED("a single rank has no peer to wait for");
    return;
  }
  Model model(test::floatLayers({50, 300, 20, 60}));
  bool ok = true;
  std::string message;
  {
    GradientAverager averager(comm, model.buffers(), withOverlap(true));
    averager.averageAll();  // a step every rank takes: the list check passes
    if (comm.rank() == 0) {
      // Rank 0 goes on alone; the others have stopped using their averager.
      const auto start = std::chrono::steady_clock::now();
      try {
        averager.averageAll();
        ok = false;
      } catch (const TimeoutError& error) {
        message = error.what();
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ok = ok && seconds < options.timeoutSeconds + 5;
      try {
        averager.markReady(0);
        ok = false;
      } catch (const AbortedError& error) {
        ok = ok && std::string(error.what()).find("cannot be used any more") != std::string::npos;
      }
    }
  }
  INFO(message);
  REQUIRE(test::allRanks(ok && (comm.rank() != 0 || message.find("timed out") != std::string::npos)));
}
