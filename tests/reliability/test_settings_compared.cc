// The settings every rank must share are compared when a Communicator is built: a rank with
// another RINGSYNC_BACKEND raises MismatchError there, on every rank and naming the ranks, instead
// of raising BackendError alone on its first host call while its peers wait out the deadline.
// Settings deliberately left out of the comparison (call_check.h says why) may differ: the calls
// still complete exactly.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;

namespace {

// The error every rank raised building a Communicator with `options` ("" when none was raised).
std::string constructionError(const Options& options) {
  try {
    Communicator comm(MPI_COMM_WORLD, options);
  } catch (const MismatchError& error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool exactSum(Communicator& comm, std::size_t count) {
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i) data[i] = static_cast<float>(comm.rank() + i % 7);
  comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
  const float n = static_cast<float>(comm.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) wrong += data[i] != n * static_cast<float>(i % 7) + n * (n - 1) / 2;
  return test::allRanks(wrong == 0);
}

}  // namespace

TEST_CASE("settings: a rank with another RINGSYNC_BACKEND is refused at construction on every rank", "[settings]") {
  const int rank = test::worldRank(), size = test::worldSize();
  if (size < 2) {
    WARN("SKIPPED: one rank cannot disagree with another");
    return;
  }
  for (BackendChoice odd : {BackendChoice::kStaged, BackendChoice::kRing}) {
    Options options = Options::fromEnvironment();
    options.backend = rank == size - 1 ? odd : BackendChoice::kAuto;
    const std::string what = constructionError(options);
    INFO("rank " << rank << ": \"" << what << "\"");
    const std::string expected = std::string("RINGSYNC_BACKEND=") + backendName(odd) + " on rank " +
                                 std::to_string(size - 1) + ", auto on rank";
    REQUIRE(test::allRanks(contains(what, expected)));
  }
}

TEST_CASE("settings: the same RINGSYNC_BACKEND everywhere is accepted", "[settings]") {
  Options options = Options::fromEnvironment();
  options.backend = BackendChoice::kRing;
  Communicator comm(MPI_COMM_WORLD, options);
  REQUIRE(exactSum(comm, 1021));
}

TEST_CASE("settings: ring depths, deadlines, waits and logs may differ between ranks", "[settings]") {
  // Local choices (how many segments in flight, how long to wait, how to wait, what to print):
  // the messages on the wire are the same, so these are not compared.
  const int rank = test::worldRank();
  Options options = Options::fromEnvironment();
  options.ringDepth = rank % 2 == 0 ? 2 : 7;
  options.ringDepthAcrossNodes = rank % 2 == 0 ? 16 : 3;
  options.timeoutSeconds = rank % 2 == 0 ? 60 : 45;
  options.stallWarnSeconds = rank % 2 == 0 ? 60 : 30;
  options.spinWait = rank % 2 == 1;
  options.algorithm = Algorithm::kRing;
  Communicator comm(MPI_COMM_WORLD, options);
  for (std::size_t count : {std::size_t{1}, std::size_t{1021}, std::size_t{(1u << 20) + 7}})
    REQUIRE(exactSum(comm, count));
}
