// Recursive doubling across two simulated hosts (run_netns_test.sh, parts "doubling": 2 hosts x 2
// ranks, and "doubling_one_per_host": 2 hosts x 1 rank): exact closed-form results for every op
// on float32, int32, float16, bfloat16 and float64 at counts 0, 1, odd, around the chunk split and
// the shard size, bit-identical on every rank; the automatic choice takes it up to
// detail::kAcrossNodesDoublingBytes (kAcrossTwoRanksDoublingBytes with one rank per host) and
// the hierarchical/ring algorithm above; and a mismatch
// (same algorithm, or a count that puts the odd ranks on another algorithm, or another
// collective) raises MismatchError naming both calls on every rank, leaving the communicator in step.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/transfer_constants.h"
#include "netns_support.h"
#include "ringsync/ringsync.h"
#include "src/selection_constants.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::netns_test;

namespace {

// The largest float32 count the automatic choice sends through recursive doubling: between two
// hosts of one rank each the alternative is the flat ring, whose limit is lower.
std::size_t largestDoublingCount(const Communicator& comm) {
  return (comm.localSize() > 1 ? detail::kAcrossNodesDoublingBytes : detail::kAcrossTwoRanksDoublingBytes) / 4;
}

}  // namespace

TEST_CASE("netns doubling: exact for every op and type, counts 0, 1, odd and around the shard size", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kRecursiveDoubling));
  const std::size_t n = static_cast<std::size_t>(comm.size());
  for (DataType type :
       {DataType::kFloat32, DataType::kInt32, DataType::kFloat16, DataType::kBFloat16, DataType::kFloat64}) {
    // Below: the node's leader alone sends the whole message (2 hosts: n / 2 ranks per host).
    const std::size_t shard = detail::kAcrossNodesShardFromBytes /
                              (std::max<std::size_t>(n / 2, 1) * dataTypeSize(type));
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, n - 1, n + 1, std::size_t{7}, shard - 1, shard,
                                shard + 1, std::size_t{4093}, std::size_t{100003}}) {
        for (bool inPlace : {false, true}) {
          REQUIRE(exactAllreduce(comm, type, op, count, inPlace));
          REQUIRE(comm.lastPlacement().algorithm == "recursive_doubling");
        }
      }
    }
  }
}

TEST_CASE("netns doubling: chosen automatically up to its limit, not above", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const std::size_t largest = largestDoublingCount(comm);
  for (std::size_t count : {std::size_t{2}, std::size_t{1021}, std::size_t{8193}, largest}) {
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, count, true));
    REQUIRE(comm.lastPlacement().algorithm == "recursive_doubling");
  }
  REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kAvg, largest + 1, true));
  REQUIRE(comm.lastPlacement().algorithm == (comm.localSize() > 1 ? "hierarchical" : "ring"));
}

// The odd rank is the second host's last rank (not its leader) and then its first (its leader,
// local rank 0, which alone crosses the network for messages below the shard size; the sharded
// doubling has every local rank cross).
TEST_CASE("netns doubling: a mismatch raises MismatchError naming both calls on every rank", "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const int n = comm.size();
  const std::size_t largest = largestDoublingCount(comm);
  // Sharded from this many floats (kAcrossNodesShardFromBytes: L x the message's bytes).
  const std::size_t sharded = detail::kAcrossNodesShardFromBytes / (4 * static_cast<std::size_t>(n / 2)) + 7;
  struct Case {
    const char* name;
    std::size_t usualCount, oddCount;
    ReduceOp oddOp;
    bool oddBroadcasts;
  };
  const Case cases[] = {
      {"count, both recursive doubling", 1001, 1000, ReduceOp::kSum, false},
      {"op, both recursive doubling", 1001, 1001, ReduceOp::kMax, false},
      {"count, the odd rank above the limit", 1001, largest + 1, ReduceOp::kSum, false},
      {"count, the others above the limit", largest + 1, 1001, ReduceOp::kSum, false},
      {"count, the odd rank sharded", 1001, sharded, ReduceOp::kSum, false},
      {"count, the others sharded", sharded, 1001, ReduceOp::kSum, false},
      {"op, both sharded", sharded, sharded, ReduceOp::kMin, false},
      {"broadcast against all-reduce", 1001, 1001, ReduceOp::kSum, true},
  };
  std::vector<int> odds{n - 1};
  if (n / 2 != n - 1) odds.push_back(n / 2);
  for (const int odd : odds)
    for (const Case& c : cases) {
      INFO("odd rank " << odd);
      const bool isOdd = comm.rank() == odd;
      const std::size_t count = isOdd ? c.oddCount : c.usualCount;
      std::vector<float> data(largest + 1, 1.0f);
      std::string what;
      try {
        if (isOdd && c.oddBroadcasts) {
          comm.broadcast(data.data(), count, DataType::kFloat32, 0);
        } else {
          comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, isOdd ? c.oddOp : ReduceOp::kSum);
        }
      } catch (const MismatchError& error) {
        what = error.what();
      }
      INFO(c.name << ", rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
      REQUIRE(mismatchNamesBoth(what, odd, c.usualCount));
      bool untouched = true;
      for (float x : data) untouched = untouched && x == 1.0f;
      REQUIRE(test::allRanks(untouched));
      // Still in step: both algorithms work exactly afterwards.
      REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 1001, true));
      REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, largest + 1, false));
    }
}
