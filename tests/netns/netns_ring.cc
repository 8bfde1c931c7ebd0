// The ring between two simulated hosts of one rank each (run_netns_test.sh, part
// "doubling_one_per_host"), where it sends a chunk of
// detail::kAcrossTwoRanksWholeChunkFromBytes..UpToBytes as one message: exact closed-form results at
// the bounds and just past them, bit-identical on every rank; and a mismatch between two calls of
// different whole chunks, or a whole chunk and a segmented one, raises MismatchError naming both
// calls on every rank (the first receive, posted before the fingerprints are compared, holds any
// call's first segment), leaving the communicator in step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/transfer_constants.h"
#include "netns_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::netns_test;

namespace {

// The float32 count whose chunks (one per rank) hold `chunkBytes` each.
std::size_t countForChunks(const Communicator& comm, std::size_t chunkBytes) {
  return static_cast<std::size_t>(comm.size()) * (chunkBytes / 4);
}

}  // namespace

TEST_CASE("netns ring: chunks sent whole are exact at the bounds and past them", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kRing));
  const std::size_t from = detail::kAcrossTwoRanksWholeChunkFromBytes,
                    upTo = detail::kAcrossTwoRanksWholeChunkUpToBytes;
  // (One element per rank fewer than the lower bound's count: chunks just under it, in segments.)
  for (std::size_t count :
       {countForChunks(comm, from) - static_cast<std::size_t>(comm.size()), countForChunks(comm, from),
        std::size_t{200704}, countForChunks(comm, upTo), countForChunks(comm, upTo) + 1}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg}) {
      for (bool inPlace : {false, true}) {
        REQUIRE(exactAllreduce(comm, DataType::kFloat32, op, count, inPlace));
        REQUIRE(comm.lastPlacement().algorithm == "ring");
      }
    }
  }
  REQUIRE(exactAllreduce(comm, DataType::kFloat64, ReduceOp::kMax, countForChunks(comm, 2 * from) / 2 + 3, true));
}

TEST_CASE("netns ring: a mismatch between whole chunks raises MismatchError naming both calls on every rank",
          "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kRing));
  const int odd = comm.size() - 1;  // on the second host
  struct Case {
    const char* name;
    std::size_t usualCount, oddCount;
  };
  // The odd rank's first segment is longer than the others' in the first case, shorter in the
  // second, and a segment of the eager-sized pipelining (against a whole chunk) in the last two.
  const Case cases[] = {
      {"whole chunks of 240 against 400 KiB", countForChunks(comm, 240 * 1024), countForChunks(comm, 400 * 1024)},
      {"whole chunks of 400 against 200 KiB", countForChunks(comm, 400 * 1024), countForChunks(comm, 200 * 1024)},
      {"a whole chunk against segments", countForChunks(comm, 300 * 1024), countForChunks(comm, 2048 * 1024)},
      {"segments against a whole chunk", countForChunks(comm, 64 * 1024), countForChunks(comm, 390 * 1024)},
  };
  for (const Case& c : cases) {
    const bool isOdd = comm.rank() == odd;
    const std::size_t count = isOdd ? c.oddCount : c.usualCount;
    std::vector<float> data(std::max(c.usualCount, c.oddCount), 1.0f);
    std::string what;
    try {
      comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    } catch (const MismatchError& error) {
      what = error.what();
    }
    INFO(c.name << ", rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
    REQUIRE(mismatchNamesBoth(what, odd, c.usualCount));
    REQUIRE(test::allRanks(std::all_of(data.begin(), data.end(), [](float x) { return x == 1.0f; })));
    // Still in step: whole chunks and segments both work exactly afterwards.
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, countForChunks(comm, 300 * 1024), true));
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, countForChunks(comm, 64 * 1024) + 5, false));
  }
}
