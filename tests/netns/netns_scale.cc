// Correctness at more ranks (run_netns_test.sh, parts scale_8x1: 8 simulated hosts x 1 rank,
// scale_4x2: 4 hosts x 2, scale_2221: 4 hosts holding 2+2+2+1, scale_3122: 4 hosts holding
// 3+1+2+2, scale_8x2: 16 ranks on 8 hosts x 2; the part names the layout in RINGSYNC_TEST_LAYOUT): every host algorithm
// forced in turn (and the automatic choice) x every type x every op x uneven counts (0, 1, n-1, n+1, a prime below the
// ranks' chunk grain, and one long enough for several parts per butterfly message), exact closed-form results,
// bit-identical all-reduce results on every rank, for the all-reduce, the reduce-scatter and the all-gather; the
// automatic choice at this layout (recursive doubling for small messages, Rabenseifner or its halves above S1 where the
// model puts them, the ring on 7 ranks); ranks numbered round-robin across the hosts; and mismatches between the
// algorithms (Rabenseifner against recursive doubling, the ring, a broadcast, a reduce-scatter) raised as MismatchError
// on every rank with the buffers untouched and the communicator in step afterwards. Split (one node only) is left out:
// across hosts a forced split is the ring. About 40-60 s per layout of 7-8 ranks on 2 shared cores.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "closed_form.h"
#include "netns_support.h"
#include "ringsync/ringsync.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::netns_test;

namespace {

// Every algorithm the selection can take across nodes, forced (mpi is Open MPI's own, tested in
// tests/core; hierarchical only where the layout has a hierarchy: elsewhere it is the automatic choice).
constexpr Algorithm kForced[] = {Algorithm::kAuto,
                                 Algorithm::kRing,
                                 Algorithm::kDirect,
                                 Algorithm::kHierarchical,
                                 Algorithm::kRecursiveDoubling,
                                 Algorithm::kRabenseifner};
constexpr std::size_t kLongCount = 20011;  // a prime; float64: 160 KB, messages of several 63 KiB parts

Options forcedWithSmallSegments(Algorithm algorithm) {
  Options options = forced(algorithm);
  options.ringSegmentBytesAcrossNodes = 4096;  // several ring segments per chunk at modest counts
  options.ringDepthAcrossNodes = 2;
  return options;
}

std::vector<std::size_t> unevenCounts(int n) {
  const auto un = static_cast<std::size_t>(n);
  return {0, 1, un - 1, un + 1, 1021, kLongCount};
}

// Out of place everywhere, in place at every other (op, count) so both are covered in half the time.
bool inPlaceFor(std::size_t opIndex, std::size_t countIndex) { return (opIndex + countIndex) % 2 == 1; }

// Which layout this is: run_netns_test.sh names it (RINGSYNC_TEST_LAYOUT), and the ranks must agree.
enum class Layout { kEightHostsOfOne, kFourHostsOfTwo, kTwoTwoTwoOne, kThreeOneTwoTwo, kEightHostsOfTwo };
Layout layoutOf(const Communicator& comm) {
  struct Named {
    const char* name;
    Layout layout;
    int ranks;
    int localSizesSummed;  // over the ranks: the sum of each host's ranks squared
  };
  constexpr Named kLayouts[] = {{"8x1", Layout::kEightHostsOfOne, 8, 8},
                                {"4x2", Layout::kFourHostsOfTwo, 8, 16},
                                {"2221", Layout::kTwoTwoTwoOne, 7, 13},
                                {"3122", Layout::kThreeOneTwoTwo, 8, 18},
                                {"8x2", Layout::kEightHostsOfTwo, 16, 32}};
  const char* named = std::getenv("RINGSYNC_TEST_LAYOUT");
  for (const Named& l : kLayouts)
    if (named != nullptr && std::string(named) == l.name) {
      if (comm.size() != l.ranks)
        FAIL("RINGSYNC_TEST_LAYOUT=" << named << " holds " << l.ranks << " ranks, not " << comm.size());
      const int summed = test::sumOverRanks(comm.localSize());
      if (summed != l.localSizesSummed)
        FAIL("RINGSYNC_TEST_LAYOUT=" << named << ": the ranks' host sizes sum to " << summed << ", not "
                                     << l.localSizesSummed << " (the hosts hold other numbers of ranks)");
      return l.layout;
    }
  FAIL("RINGSYNC_TEST_LAYOUT must name the layout (8x1, 4x2, 2221, 3122 or 8x2), not " << (named ? named : "nothing"));
  return Layout::kEightHostsOfOne;
}
// Nodes of the same number (>= 2) of ranks each: the hierarchical algorithms are possible.
bool hasHierarchy(Layout layout) { return layout == Layout::kFourHostsOfTwo || layout == Layout::kEightHostsOfTwo; }

// MPI_COMM_WORLD renumbered round-robin across the hosts: every host's first rank, then every
// host's second, ... (hosts in the order of their first rank). The caller frees it.
MPI_Comm roundRobinAcrossHosts() {
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int localRank = 0, leader = test::worldRank();
  MPI_Comm_rank(node, &localRank);
  MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, node);
  MPI_Comm_free(&node);
  std::vector<int> leaders(static_cast<std::size_t>(test::worldSize()));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  const int hostIndex = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader) - leaders.begin());
  MPI_Comm roundRobin;
  MPI_Comm_split(MPI_COMM_WORLD, 0, localRank * test::worldSize() + hostIndex, &roundRobin);
  return roundRobin;
}

// One communicator under `algorithm`, each case's odd rank making another call than the others.
void mismatchesRaised(Algorithm algorithm) {
  Communicator comm(MPI_COMM_WORLD, forced(algorithm));
  const int n = comm.size(), odd = n - 1;  // the last host's (last) rank
  enum class Odd { kAllreduce, kBroadcast, kReduceScatter };
  struct Case {
    const char* name;
    std::size_t usualCount, oddCount;
    ReduceOp oddOp;
    Odd odd;
  };
  const Case cases[] = {
      {"count, both above S1", kLongCount, kLongCount - 11, ReduceOp::kSum, Odd::kAllreduce},
      {"count, the odd rank below S1 (recursive doubling)", kLongCount, 101, ReduceOp::kSum, Odd::kAllreduce},
      {"count, the others below S1", 101, kLongCount, ReduceOp::kSum, Odd::kAllreduce},
      {"op, above S1", kLongCount, kLongCount, ReduceOp::kMax, Odd::kAllreduce},
      {"a very large count (the ring or hierarchical on 7 ranks)", kLongCount, 3000017, ReduceOp::kSum,
       Odd::kAllreduce},
      {"broadcast against all-reduce", kLongCount, kLongCount, ReduceOp::kSum, Odd::kBroadcast},
      {"reduce-scatter against all-reduce", kLongCount, kLongCount / 8, ReduceOp::kSum, Odd::kReduceScatter},
  };
  for (const Case& c : cases) {
    const bool isOdd = comm.rank() == odd;
    const std::size_t count = isOdd ? c.oddCount : c.usualCount;
    std::vector<float> data(std::max<std::size_t>(3000017, kLongCount * static_cast<std::size_t>(n)), 1.0f);
    std::string what;
    try {
      if (isOdd && c.odd == Odd::kBroadcast) {
        comm.broadcast(data.data(), count, DataType::kFloat32, 0);
      } else if (isOdd && c.odd == Odd::kReduceScatter) {
        comm.reduceScatter(data.data(), data.data() + count * static_cast<std::size_t>(odd), count, DataType::kFloat32,
                           ReduceOp::kSum);
      } else {
        comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, isOdd ? c.oddOp : ReduceOp::kSum);
      }
    } catch (const MismatchError& error) {
      what = error.what();
    }
    INFO(c.name << ", rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
    REQUIRE(mismatchNamesBoth(what, odd, c.usualCount));
    REQUIRE(test::allRanks(std::all_of(data.begin(), data.end(), [](float x) { return x == 1.0f; })));
    // Still in step, nothing stale left: both sides of S1 exact afterwards.
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 101, true));
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, kLongCount, false));
  }
}

}  // namespace

TEST_CASE("netns scale: allreduce, every algorithm x type x op x uneven count", "[netns_scale]") {
  for (Algorithm algorithm : kForced) {
    Communicator comm(MPI_COMM_WORLD, forcedWithSmallSegments(algorithm));
    if (algorithm == Algorithm::kHierarchical && !hasHierarchy(layoutOf(comm))) continue;
    const std::vector<std::size_t> counts = unevenCounts(comm.size());
    for (DataType type : kAllDataTypes)
      for (std::size_t o = 0; o < std::size(kAllReduceOps); ++o)
        for (std::size_t c = 0; c < counts.size(); ++c) {
          INFO("RINGSYNC_ALGO=" << algorithmName(algorithm));
          REQUIRE(exactAllreduce(comm, type, kAllReduceOps[o], counts[c], inPlaceFor(o, c)));
          if (algorithm == Algorithm::kRabenseifner) REQUIRE(comm.lastPlacement().algorithm == "rabenseifner");
        }
  }
}

TEST_CASE("netns scale: reduce-scatter and all-gather, every algorithm x type (x op) x uneven count", "[netns_scale]") {
  for (Algorithm algorithm :
       {Algorithm::kAuto, Algorithm::kRing, Algorithm::kDirect, Algorithm::kHierarchical, Algorithm::kRabenseifner}) {
    Communicator comm(MPI_COMM_WORLD, forcedWithSmallSegments(algorithm));
    if (algorithm == Algorithm::kHierarchical && !hasHierarchy(layoutOf(comm))) continue;
    const std::vector<std::size_t> counts = unevenCounts(comm.size());
    const bool halves = algorithm == Algorithm::kRabenseifner;
    INFO("RINGSYNC_ALGO=" << algorithmName(algorithm));
    for (DataType type : kAllDataTypes)
      for (std::size_t c = 0; c < counts.size(); ++c) {
        for (std::size_t o = 0; o < std::size(kAllReduceOps); ++o) {
          REQUIRE(exactReduceScatter(comm, type, kAllReduceOps[o], counts[c], inPlaceFor(o, c)));
          if (halves) REQUIRE(comm.lastPlacement().algorithm == "recursive_halving");
        }
        REQUIRE(exactAllgather(comm, type, counts[c], inPlaceFor(0, c)));
        if (halves) REQUIRE(comm.lastPlacement().algorithm == "recursive_doubling");
      }
  }
}

TEST_CASE("netns scale: the automatic choice at this layout", "[netns_scale]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const Layout layout = layoutOf(comm);
  // 101 floats: below S1 everywhere (recursive doubling); 20011 floats (80 KB): Rabenseifner on a
  // power of two of butterfly members (8 ranks on nodes of different sizes or of one rank, 4 or 8
  // nodes of 2: S1 is 4-8 KB there), the ring on 7 ranks (past S2, N not a power of 2).
  REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 101, false));
  REQUIRE(comm.lastPlacement().algorithm == "recursive_doubling");
  REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kAvg, kLongCount, true));
  REQUIRE(comm.lastPlacement().algorithm == (layout == Layout::kTwoTwoTwoOne ? "ring" : "rabenseifner"));
  // Blocks past a direct round: hierarchical on nodes of two, the halves on 8 ranks without a
  // hierarchy (one per host, or nodes of 3, 1, 2, 2), the ring on 7.
  const char* blockwise = hasHierarchy(layout) ? "hierarchical" : layout == Layout::kTwoTwoTwoOne ? "ring" : nullptr;
  REQUIRE(exactReduceScatter(comm, DataType::kFloat32, ReduceOp::kSum, kLongCount, false));
  REQUIRE(comm.lastPlacement().algorithm == (blockwise ? blockwise : "recursive_halving"));
  REQUIRE(exactAllgather(comm, DataType::kFloat32, kLongCount, false));
  REQUIRE(comm.lastPlacement().algorithm == (blockwise ? blockwise : "recursive_doubling"));
}

TEST_CASE("netns scale: ranks numbered round-robin across the hosts", "[netns_scale]") {
  MPI_Comm roundRobin = roundRobinAcrossHosts();
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRabenseifner, Algorithm::kHierarchical}) {
    Communicator comm(roundRobin, forced(algorithm));
    INFO("RINGSYNC_ALGO=" << algorithmName(algorithm));
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax})
      for (std::size_t count : {std::size_t{101}, kLongCount, std::size_t{300007}}) {
        REQUIRE(exactAllreduce(comm, DataType::kFloat32, op, count, count == kLongCount, roundRobin));
        REQUIRE(exactReduceScatter(comm, DataType::kFloat64, op, count / 8, false));
      }
    REQUIRE(exactAllgather(comm, DataType::kInt32, kLongCount, true));
  }
  MPI_Comm_free(&roundRobin);
}

TEST_CASE("netns scale: a mismatch raises MismatchError on every rank, buffers untouched, still in step",
          "[netns_scale][faults]") {
  // Automatic: Rabenseifner (or the ring on 7 ranks) against recursive doubling, the ring, a
  // broadcast, a reduce-scatter; forced: butterflies against butterflies (with folded ranks on 7).
  for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRabenseifner}) {
    INFO("RINGSYNC_ALGO=" << algorithmName(algorithm));
    mismatchesRaised(algorithm);
  }
}
