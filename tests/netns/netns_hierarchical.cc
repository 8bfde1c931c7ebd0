// The hierarchical all-reduce across two simulated hosts with two ranks each (run_netns_test.sh,
// part "hierarchical"): exact closed-form results for every op on float32, int32, float16 and
// float64 at counts around the chunk and piece boundaries, bit-identical on every rank; the
// automatic choice takes it above the across-node direct limit; rank numberings that are not node
// by node work; a layout without the same number of ranks on every node falls back with a
// reason; and a mismatch across or inside the hosts raises MismatchError on every rank, leaving
// the communicator usable. The hierarchical broadcast (chain across the hosts, shared memory
// inside them): exact from every root, with either rank numbering, in several node rounds, chosen
// above the direct limit or forced, and a root mismatch raised on every rank. Small reduce-scatters
// and all-gathers through the nodes' shared memory and the butterfly between the hosts: exact for
// every type and op, and mismatches against the hierarchical versions and each other raised.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "netns_support.h"
#include "ringsync/ringsync.h"
#include "src/selection_constants.h"
#include "support/test_support.h"

using namespace ringsync;
using namespace ringsync::netns_test;

TEST_CASE("netns hierarchical: exact for every op and type around chunk and piece boundaries", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kHierarchical));
  const std::size_t n = static_cast<std::size_t>(comm.size());
  for (DataType type : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16, DataType::kFloat64}) {
    // The algorithm pipelines 2 MiB pieces: three pieces and a few elements.
    const std::size_t piece = 3 * (2u << 20) / dataTypeSize(type);
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProd}) {
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, n - 1, n, n + 1, 2 * n + 1, std::size_t{1021}}) {
        for (bool inPlace : {false, true}) {
          REQUIRE(exactAllreduce(comm, type, op, count, inPlace, MPI_COMM_WORLD));
          REQUIRE(comm.lastPlacement().algorithm == "hierarchical");
        }
      }
      REQUIRE(exactAllreduce(comm, type, op, piece + 3, true, MPI_COMM_WORLD));
      REQUIRE(comm.lastPlacement().algorithm == "hierarchical");
    }
  }
}

TEST_CASE("netns hierarchical: chosen automatically above the across-node recursive-doubling limit", "[netns]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 1021, false, MPI_COMM_WORLD));
  REQUIRE(comm.lastPlacement().algorithm == "recursive_doubling");
  for (std::size_t count : {detail::kAcrossNodesDoublingBytes / 4 + 1, std::size_t{300001}, std::size_t{3u << 20}}) {
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kAvg, count, true, MPI_COMM_WORLD));
    REQUIRE(comm.lastPlacement().algorithm == "hierarchical");
  }
}

TEST_CASE("netns hierarchical: ranks numbered across the hosts alternately", "[netns]") {
  // New ranks: host 0's first, host 1's first, host 0's second, host 1's second.
  MPI_Comm interleaved = interleavedAcrossHosts();
  {
    Communicator comm(interleaved, forced(Algorithm::kAuto));
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax})
      for (std::size_t count :
           {std::size_t{1001}, std::size_t{100003}, std::size_t{300001}, std::size_t{(1u << 20) + 5}}) {
        REQUIRE(exactAllreduce(comm, DataType::kFloat32, op, count, false, interleaved));
        REQUIRE(comm.lastPlacement().algorithm ==
                (count * 4 <= detail::kAcrossNodesDoublingBytes ? "recursive_doubling" : "hierarchical"));
      }
  }
  MPI_Comm_free(&interleaved);
}

TEST_CASE("netns hierarchical: other layouts fall back to the ring", "[netns]") {
  // Three ranks (two on one host, one on the other) and two ranks (one per host): forced
  // hierarchical is refused and the ring serves, exactly.
  const int rank = test::worldRank();
  const int localRank = localRankOnHost();
  const int colors[2] = {rank == test::worldSize() - 1 ? MPI_UNDEFINED : 0, localRank == 0 ? 0 : MPI_UNDEFINED};
  for (int color : colors) {
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
    if (sub != MPI_COMM_NULL) {
      Communicator comm(sub, forced(Algorithm::kHierarchical));
      REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 300001, true, sub));
      REQUIRE(comm.lastPlacement().algorithm == "ring");
      MPI_Comm_free(&sub);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

TEST_CASE("netns hierarchical: a mismatch raises MismatchError on every rank", "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const int host = hostIndex();
  const int n = comm.size();
  // Across the hosts: the second host's ranks agree with each other, not with the first host's.
  // Inside a host: only the last rank differs. Straddling the recursive-doubling limit: the second
  // host's count takes recursive doubling, the first host's the hierarchical algorithm, which
  // starts with a round on the whole communicator; recursive doubling watches for it and meets it
  // there instead of waiting apart.
  struct Case {
    bool across;
    std::size_t oddCount;
  };
  // Above the recursive-doubling limit, so that the usual count takes the hierarchical algorithm.
  const std::size_t usual = detail::kAcrossNodesDoublingBytes / 4 + 1001;
  const Case cases[3] = {{true, usual - 1}, {false, usual - 1}, {true, 1000}};
  for (const Case& c : cases) {
    const bool across = c.across;
    const bool odd = across ? host == 1 : comm.rank() == n - 1;
    const std::size_t count = odd ? c.oddCount : usual;
    std::vector<float> data(usual, 1.0f);
    std::string what;
    try {
      comm.allreduce(data.data(), data.data(), count, DataType::kFloat32, ReduceOp::kSum);
    } catch (const MismatchError& error) {
      what = error.what();
    }
    INFO((across ? "across hosts" : "inside a host")
         << ", rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
    // Every rank names both calls: the call is checked on the whole communicator first (the
    // weaker "made different calls" form is what a node-only check would give).
    const bool namesBoth = what.find("count=" + std::to_string(c.oddCount)) != std::string::npos &&
                           what.find("count=" + std::to_string(usual)) != std::string::npos;
    const bool namesNode = what.find("made different calls") != std::string::npos;
    REQUIRE(test::allRanks(what.find("disagree") != std::string::npos && (namesBoth || (!across && namesNode))));
    // Found from the fingerprints before any data moved: the communicator is still in step.
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, usual, true, MPI_COMM_WORLD));
    REQUIRE(comm.lastPlacement().algorithm == "hierarchical");
  }
}

namespace {

// Broadcasts from every root at counts below the direct limit (direct), above it (chain), above
// the hierarchical broadcast's limit and above one node round (4 MiB at 2 ranks per node: two
// pieces); true when every rank holds the root's values and the expected algorithm served.
bool exactBroadcasts(Communicator& comm, MPI_Comm world, bool forcedHierarchical) {
  bool ok = true;
  for (int root = 0; root < comm.size(); ++root)
    for (std::size_t count :
         {std::size_t{1}, std::size_t{5}, std::size_t{40001}, std::size_t{131073}, std::size_t{1200007}}) {
      std::vector<std::int32_t> data(count, -1);
      auto value = [root](std::size_t i) { return static_cast<std::int32_t>(i * 3 + static_cast<std::size_t>(root)); };
      if (comm.rank() == root)
        for (std::size_t i = 0; i < count; ++i) data[i] = value(i);
      comm.broadcast(data.data(), count, DataType::kInt32, root);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < count; ++i) wrong += data[i] != value(i);
      const char* expected = forcedHierarchical || count * 4 > detail::kHierarchicalBroadcastFromBytes ? "hierarchical"
                             : count * 4 > 32 * 1024                                                   ? "chain"
                                                                                                       : "direct";
      INFO("broadcast root " << root << " count " << count << ": rank " << comm.rank() << " has " << wrong
                             << " wrong, algorithm " << comm.lastPlacement().algorithm);
      ok = ok && test::allRanks(wrong == 0 && comm.lastPlacement().algorithm == expected, world);
    }
  return ok;
}

}  // namespace

TEST_CASE("netns hierarchical broadcast: exact from every root, any rank numbering, chosen above its limit",
          "[netns]") {
  {
    Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
    REQUIRE(exactBroadcasts(comm, MPI_COMM_WORLD, false));
  }
  {
    Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kHierarchical));
    REQUIRE(exactBroadcasts(comm, MPI_COMM_WORLD, true));
  }
  // Host 0's first rank, host 1's first, host 0's second, host 1's second.
  MPI_Comm interleaved = interleavedAcrossHosts();
  {
    Communicator comm(interleaved, forced(Algorithm::kAuto));
    REQUIRE(exactBroadcasts(comm, interleaved, false));
  }
  MPI_Comm_free(&interleaved);
}

TEST_CASE("netns hierarchical broadcast: a root mismatch raises MismatchError on every rank", "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const int n = comm.size();
  const std::size_t count = 131073;  // above the hierarchical broadcast's limit
  std::vector<std::int32_t> data(count, 7);
  std::string what;
  try {
    comm.broadcast(data.data(), count, DataType::kInt32, comm.rank() == n - 1 ? 1 : 0);
  } catch (const MismatchError& error) {
    what = error.what();
  }
  INFO("rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
  REQUIRE(test::allRanks(what.find("rank " + std::to_string(n - 1) + " called broadcast") != std::string::npos));
  REQUIRE(exactBroadcasts(comm, MPI_COMM_WORLD, false));
}

// The hierarchical reduce-scatter and all-gather hand each local rank the blocks of the ranks with
// its local rank: with ranks numbered alternately across the hosts those are not neighbours.
TEST_CASE("netns hierarchical: reduce-scatter and all-gather, node by node and alternately numbered", "[netns]") {
  MPI_Comm interleaved = interleavedAcrossHosts();
  for (MPI_Comm group : {MPI_COMM_WORLD, interleaved}) {
    Communicator comm(group, forced(Algorithm::kHierarchical));
    const int n = comm.size(), rank = comm.rank();
    const std::size_t un = static_cast<std::size_t>(n), ur = static_cast<std::size_t>(rank);
    for (std::size_t count : {std::size_t{1}, std::size_t{1021}, std::size_t{600007}}) {  // the last: several pieces
      std::vector<std::int32_t> send(count * un), out(count), gathered(count * un, -1), block(count);
      for (std::size_t i = 0; i < send.size(); ++i) send[i] = static_cast<std::int32_t>(i % 1000) + rank;
      comm.reduceScatter(send.data(), out.data(), count, DataType::kInt32, ReduceOp::kSum);
      std::size_t wrong = 0;
      for (std::size_t j = 0; j < count; ++j)
        wrong += out[j] != static_cast<std::int32_t>(((ur * count + j) % 1000) * un + un * (un - 1) / 2);
      for (std::size_t j = 0; j < count; ++j) block[j] = static_cast<std::int32_t>(j % 777) * 10 + rank;
      comm.allgather(block.data(), gathered.data(), count, DataType::kInt32);
      for (std::size_t i = 0; i < gathered.size(); ++i)
        wrong += gathered[i] !=
                 static_cast<std::int32_t>((i % count) % 777) * 10 + static_cast<std::int32_t>(i / count);
      INFO("count " << count << (group == interleaved ? " alternately numbered" : "") << ": rank " << rank << " has "
                    << wrong << " wrong");
      REQUIRE(test::allRanks(wrong == 0 && comm.lastPlacement().algorithm == "hierarchical", group));
    }
    // One rank all-gathers while the others reduce-scatter: MismatchError everywhere, usable after.
    std::string what;
    std::vector<float> a(4096 * un, 1.0f), b(4096 * un, 0.0f);
    try {
      if (rank == n - 1) {
        comm.allgather(a.data(), b.data(), 4096, DataType::kFloat32);
      } else {
        comm.reduceScatter(a.data(), b.data(), 4096, DataType::kFloat32, ReduceOp::kSum);
      }
    } catch (const MismatchError& error) {
      what = error.what();
    }
    REQUIRE(test::allRanks(what.find("called allgather") != std::string::npos, group));
    REQUIRE(exactAllreduce(comm, DataType::kFloat32, ReduceOp::kSum, 1001, false, group));
  }
  MPI_Comm_free(&interleaved);
}

// Small arrays across the hosts take the halves through the nodes' leaders
// (recursive_halving_blockwise.h): a node round to the leader, the butterfly among the leaders, a
// second node round back. Every type and op, counts 0 to a 64 KiB array, in place and not, node by
// node, alternately numbered and with the leaders meeting the nodes in another order than the
// other local ranks (the blocks' places in the leaders' array).
TEST_CASE("netns hierarchical: small reduce-scatters and all-gathers through the nodes, exact", "[netns]") {
  MPI_Comm interleaved = interleavedAcrossHosts(), crossed = crossedAcrossHosts();
  for (MPI_Comm group : {MPI_COMM_WORLD, interleaved, crossed}) {
    Communicator comm(group, forced(Algorithm::kAuto));
    INFO((group == interleaved ? "alternately numbered" : group == crossed ? "crossed" : "node by node"));
    const std::size_t counts[] = {0, 1, 3, 257, 2047};  // 2047 float64: a 64 KiB array, 16 KiB blocks
    for (DataType type : kAllDataTypes)
      for (std::size_t c = 0; c < std::size(counts); ++c) {
        for (std::size_t o = 0; o < std::size(kAllReduceOps); ++o) {
          REQUIRE(exactReduceScatter(comm, type, kAllReduceOps[o], counts[c], (o + c) % 2 == 1));
          REQUIRE(test::allRanks(comm.lastPlacement().algorithm == "recursive_halving"));
        }
        REQUIRE(exactAllgather(comm, type, counts[c], c % 2 == 1));
        REQUIRE(test::allRanks(comm.lastPlacement().algorithm == "recursive_doubling"));
      }
    // Past the halves' limit: the hierarchical versions.
    REQUIRE(exactReduceScatter(comm, DataType::kFloat32, ReduceOp::kSum, 16411, false));
    REQUIRE(test::allRanks(comm.lastPlacement().algorithm == "hierarchical"));
  }
  MPI_Comm_free(&interleaved);
  MPI_Comm_free(&crossed);
}

// The last rank makes another call than the others, where the halves meet the hierarchical
// versions, each other and the all-reduce's recursive doubling: MismatchError on every rank, its
// output untouched, and the communicator in step afterwards.
TEST_CASE("netns hierarchical: small reduce-scatters and all-gathers, a mismatch raises on every rank",
          "[netns][faults]") {
  Communicator comm(MPI_COMM_WORLD, forced(Algorithm::kAuto));
  const int n = comm.size();
  enum class Call { kReduceScatter, kAllgather, kAllreduce };
  struct Case {
    const char* name;
    Call usual;
    std::size_t usualCount;
    Call oddCall;
    std::size_t oddCount;
  };
  // 128 floats a block: a 2 KiB array, 64: 1 KiB (both the halves through the nodes' leaders); the
  // all-reduce of 128 floats: the leaders' recursive doubling.
  const Case cases[] = {
      {"all-gather against reduce-scatter, both halves", Call::kReduceScatter, 128, Call::kAllgather, 128},
      {"reduce-scatter count, the odd rank hierarchical", Call::kReduceScatter, 128, Call::kReduceScatter, 20011},
      {"reduce-scatter count, the others hierarchical", Call::kReduceScatter, 20011, Call::kReduceScatter, 128},
      {"reduce-scatter count, both halves", Call::kReduceScatter, 128, Call::kReduceScatter, 64},
      {"all-gather count, both halves", Call::kAllgather, 128, Call::kAllgather, 2047},
      {"all-gather count, the odd rank hierarchical", Call::kAllgather, 128, Call::kAllgather, 20011},
      {"all-gather count, both halves, smaller", Call::kAllgather, 64, Call::kAllgather, 128},
      {"all-reduce (recursive doubling) against reduce-scatter", Call::kReduceScatter, 128, Call::kAllreduce, 128},
  };
  const auto un = static_cast<std::size_t>(n);
  // The odd rank: the second host's last (not its leader), then its first (its leader).
  for (const int odd : {n - 1, n / 2})
    for (const Case& c : cases) {
      INFO("odd rank " << odd);
      const bool isOdd = comm.rank() == odd;
      const Call call = isOdd ? c.oddCall : c.usual;
      const std::size_t count = isOdd ? c.oddCount : c.usualCount;
      std::vector<float> in(20011 * un, 1.0f), out(20011 * un, -2.0f);
      std::string what;
      try {
        if (call == Call::kReduceScatter)
          comm.reduceScatter(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum);
        if (call == Call::kAllgather) comm.allgather(in.data(), out.data(), count, DataType::kFloat32);
        if (call == Call::kAllreduce) comm.allreduce(in.data(), out.data(), count, DataType::kFloat32, ReduceOp::kSum);
      } catch (const MismatchError& error) {
        what = error.what();
      }
      INFO(c.name << ", rank " << comm.rank() << ": " << (what.empty() ? std::string("no MismatchError") : what));
      REQUIRE(test::allRanks(what.find("rank " + std::to_string(odd) + " called") != std::string::npos));
      REQUIRE(test::allRanks(std::all_of(out.begin(), out.end(), [](float x) { return x == -2.0f; })));
      REQUIRE(exactReduceScatter(comm, DataType::kFloat32, ReduceOp::kSum, 128, false));
      REQUIRE(exactAllgather(comm, DataType::kFloat32, 20011, false));
    }
}
