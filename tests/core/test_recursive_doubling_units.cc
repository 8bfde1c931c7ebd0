// Single-process pieces of the across-node algorithms: the call summary that rides on recursive
// doubling's messages (the same verdict whatever order the ranks' summaries are merged in), and
// when the one selection function chooses recursive doubling and the hierarchical broadcast
// (across nodes only; one node unchanged).
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "collectives/call_summary.h"
#include "ringsync/options.h"
#include "src/algorithm_selection.h"
#include "src/selection_constants.h"

using namespace ringsync;
using namespace ringsync::detail;

namespace {

CallHeader allreduceCall(std::uint64_t count) {
  CallHeader call;
  call.sequence = 7;
  call.count = count;
  call.kind = CollectiveKind::kAllreduce;
  call.dataType = DataType::kFloat32;
  call.op = ReduceOp::kSum;
  return call;
}

CallSummary of(const std::vector<int>& ranks, const std::vector<CallHeader>& calls) {
  CallSummary summary;
  for (int r : ranks) summary.add(r, calls[static_cast<std::size_t>(r)]);
  return summary;
}

}  // namespace

TEST_CASE("call summary: the same verdict whatever order the ranks are merged in", "[units][recursive_doubling]") {
  std::vector<CallHeader> calls(6, allreduceCall(1001));
  calls[3] = allreduceCall(1000);
  calls[4].flags |= kFlagNonFiniteInput;
  // Recursive doubling's order ({0,1},{2,3},{4,5} then pairs) and the reverse.
  CallSummary a = of({0, 1}, calls), b = of({2, 3}, calls), c = of({4, 5}, calls);
  CallSummary forward = a;
  forward.merge(b);
  forward.merge(c);
  CallSummary backward = c;
  backward.merge(b);
  backward.merge(a);
  CallSummary oneByOne = of({5, 3, 1, 4, 0, 2}, calls);
  REQUIRE(std::memcmp(&forward, &backward, sizeof forward) == 0);
  REQUIRE(std::memcmp(&forward, &oneByOne, sizeof forward) == 0);
  REQUIRE(forward.disagrees());
  REQUIRE(forward.ranks == 6);
  REQUIRE(forward.groups[0].lowestRank == 0);
  REQUIRE(forward.groups[0].rankMask == 0b110111);
  REQUIRE(forward.groups[1].lowestRank == 3);
  REQUIRE(forward.groups[1].rankMask == 0b001000);
  REQUIRE(forward.nonFiniteMask == 0b010000);
  REQUIRE(!(forward.flags & CallSummary::kMoreCalls));
}

TEST_CASE("call summary: who arrived last, whatever the merge order", "[units][recursive_doubling]") {
  std::vector<CallHeader> calls(6, allreduceCall(64));
  const std::int64_t arrivals[] = {100, 400, 250, 400, 90, 300};  // ranks 1 and 3 tie: the lower is last
  for (std::size_t r = 0; r < calls.size(); ++r) calls[r].arrivalNs = arrivals[r];
  CallSummary a = of({0, 1}, calls), b = of({2, 3}, calls), c = of({4, 5}, calls);
  CallSummary forward = a;
  forward.merge(b);
  forward.merge(c);
  CallSummary backward = c;
  backward.merge(b);
  backward.merge(a);
  for (const CallSummary& s : {forward, backward, of({5, 3, 1, 4, 0, 2}, calls)}) {
    REQUIRE(s.everyArrivalKnown());
    REQUIRE(s.latestRank == 1);
    REQUIRE(s.latestArrivalNs == 400);
    REQUIRE(s.waitedForLatestNs() == 6 * 400 - (100 + 400 + 250 + 400 + 90 + 300));
  }
  calls[4].arrivalNs = 0;  // a rank that does not measure: no verdict
  REQUIRE(!of({0, 1, 2, 3, 4, 5}, calls).everyArrivalKnown());
  REQUIRE(!CallSummary{}.everyArrivalKnown());
}

TEST_CASE("call summary: agreement, and more calls than it can list", "[units][recursive_doubling]") {
  std::vector<CallHeader> calls(4, allreduceCall(5));
  calls[1].arrivalNs = 123;  // per-rank observations are not part of the call
  calls[1].flags = kFlagEarlyRingSend;
  REQUIRE(!of({0, 1, 2, 3}, calls).disagrees());
  REQUIRE(!of({0, 1, 2, 3}, calls).nonFinite());
  calls[2] = allreduceCall(6);
  calls[3] = allreduceCall(7);
  const CallSummary three = of({3, 2, 1, 0}, calls);
  REQUIRE(three.disagrees());
  REQUIRE((three.flags & CallSummary::kMoreCalls));
  REQUIRE(three.groups[0].lowestRank == 0);  // the lowest ranks' calls are the ones kept
  REQUIRE(three.groups[1].lowestRank == 2);
  CallSummary far;
  far.add(70, allreduceCall(5));
  REQUIRE((far.flags & CallSummary::kRanksBeyondMask));
}

TEST_CASE("selection: recursive doubling across nodes up to its limit; one node unchanged",
          "[units][recursive_doubling]") {
  Options options;
  // Two nodes of `size / 2` ranks (or `size` single-rank nodes, or one node), unless `members` says
  // how many take part in the doubling.
  auto choose = [&](std::size_t bytes, HierarchyBlocker hierarchy, int size, int members = 0) {
    const bool oneNode = hierarchy == HierarchyBlocker::kOneNode;
    if (members == 0) members = oneNode ? 0 : hierarchy == HierarchyBlocker::kNone ? 2 : size;
    const SelectionInputs in{CollectiveKind::kAllreduce,
                             bytes / 4,
                             4,
                             size,
                             oneNode,
                             oneNode ? std::size_t{4} << 20 : 32768,
                             options,
                             hierarchy,
                             hierarchy == HierarchyBlocker::kNone ? std::size_t{4} << 20 : 0,
                             members};
    return std::string(algorithmName(chooseAlgorithm(in).algorithm));
  };
  const std::size_t limit = detail::kAcrossNodesDoublingBytes;
  REQUIRE(choose(8, HierarchyBlocker::kNone, 4) == "recursive_doubling");
  REQUIRE(choose(limit, HierarchyBlocker::kNone, 4) == "recursive_doubling");
  REQUIRE(choose(limit + 4, HierarchyBlocker::kNone, 4) == "hierarchical");
  REQUIRE(choose(8, HierarchyBlocker::kOneRankPerNode, 2) == "recursive_doubling");
  // Two single-rank nodes: against the flat ring, which overlaps its two halves, a lower limit.
  const std::size_t two = detail::kAcrossTwoRanksDoublingBytes;
  REQUIRE(two < limit);
  REQUIRE(choose(two, HierarchyBlocker::kOneRankPerNode, 2) == "recursive_doubling");
  REQUIRE(choose(two + 4, HierarchyBlocker::kOneRankPerNode, 2) == "ring");
  REQUIRE(choose(limit, HierarchyBlocker::kOneRankPerNode, 2) == "ring");
  REQUIRE(choose(8, HierarchyBlocker::kUnevenNodes, 3) == "recursive_doubling");
  // Three in the doubling: log2(N) whole messages against the ring's 2(N-1)/N, a lower limit. (From
  // four members on, Rabenseifner takes over from S1: tested in test_allreduce.cc.)
  const std::size_t many = detail::kAcrossManyNodesDoublingBytes;
  REQUIRE(many < limit);
  REQUIRE(choose(many, HierarchyBlocker::kNone, 6, 3) == "recursive_doubling");
  REQUIRE(choose(many + 4, HierarchyBlocker::kNone, 6, 3) == "hierarchical");
  REQUIRE(choose(many, HierarchyBlocker::kOneRankPerNode, 3) == "recursive_doubling");
  REQUIRE(choose(many + 4, HierarchyBlocker::kOneRankPerNode, 3) == "ring");
  REQUIRE(choose(many + 4, HierarchyBlocker::kUnevenNodes, 3) == "ring");
  REQUIRE(choose(8, HierarchyBlocker::kOneNode, 4) == "direct");
  REQUIRE(choose(1 << 20, HierarchyBlocker::kOneNode, 4) == "split");
  options.algorithm = Algorithm::kRecursiveDoubling;
  REQUIRE(choose(8, HierarchyBlocker::kOneNode, 4) == "recursive_doubling");
  REQUIRE(choose(1 << 20, HierarchyBlocker::kOneNode, 4) == "recursive_doubling");
  REQUIRE(choose(detail::kRecursiveDoublingMaxBytes + 4, HierarchyBlocker::kOneNode, 4) != "recursive_doubling");
  REQUIRE(choose(8, HierarchyBlocker::kOneNode, 1) != "recursive_doubling");
}

TEST_CASE("selection: broadcast across nodes takes the hierarchical broadcast above its limit",
          "[units][hierarchical]") {
  Options options;
  auto choose = [&](std::size_t bytes, HierarchyBlocker hierarchy) {
    const bool oneNode = hierarchy == HierarchyBlocker::kOneNode;
    const SelectionInputs in{CollectiveKind::kBroadcast,
                             bytes,
                             1,
                             4,
                             oneNode,
                             oneNode ? std::size_t{4} << 20 : 32768,
                             options,
                             hierarchy,
                             hierarchy == HierarchyBlocker::kNone ? std::size_t{4} << 20 : 0};
    return std::string(algorithmName(chooseAlgorithm(in).algorithm));
  };
  REQUIRE(choose(8, HierarchyBlocker::kNone) == "direct");
  REQUIRE(choose(32768, HierarchyBlocker::kNone) == "direct");
  REQUIRE(choose(32769, HierarchyBlocker::kNone) == "chain");
  const std::size_t above = detail::kHierarchicalBroadcastFromBytes + 1;
  REQUIRE(choose(above, HierarchyBlocker::kNone) == "hierarchical");
  REQUIRE(choose(above, HierarchyBlocker::kOneRankPerNode) == "chain");
  REQUIRE(choose(above, HierarchyBlocker::kUnevenNodes) == "chain");
  REQUIRE(choose(1 << 20, HierarchyBlocker::kOneNode) == "direct");  // one node: unchanged
  REQUIRE(choose(8u << 20, HierarchyBlocker::kOneNode) == "chain");
  options.algorithm = Algorithm::kHierarchical;
  REQUIRE(choose(8, HierarchyBlocker::kNone) == "hierarchical");
  REQUIRE(choose(8, HierarchyBlocker::kOneNode) == "direct");
}
