#include "call_summary.h"

#include <algorithm>
#include <cstdint>

namespace ringsync::detail {
namespace {
// Unused groups sort last.
bool byLowestRank(const CallSummary::Group& a, const CallSummary::Group& b) {
  return (a.lowestRank < 0 ? INT32_MAX : a.lowestRank) < (b.lowestRank < 0 ? INT32_MAX : b.lowestRank);
}
}  // namespace

void CallSummary::add(int rank, const CallHeader& call) {
  Group group;
  group.call = call;
  group.lowestRank = rank;
  if (rank < kMaskRanks) {
    group.rankMask = std::uint64_t{1} << rank;
  } else {
    flags |= kRanksBeyondMask;
  }
  if (call.flags & kFlagNonFiniteInput) {
    if (rank < kMaskRanks) {
      nonFiniteMask |= std::uint64_t{1} << rank;
    } else {
      flags |= kNonFiniteBeyondMask;
    }
  }
  place(group);
  ++ranks;
  if (call.arrivalNs != 0) noteArrival(rank, call.arrivalNs, call.arrivalNs, 1);
}

void CallSummary::merge(const CallSummary& other) {
  for (const Group& group : other.groups)
    if (group.lowestRank >= 0) place(group);
  nonFiniteMask |= other.nonFiniteMask;
  flags |= other.flags;
  ranks += other.ranks;
  if (other.arrivalsKnown > 0)
    noteArrival(other.latestRank, other.latestArrivalNs, other.arrivalSumNs, other.arrivalsKnown);
}

void CallSummary::noteArrival(int rank, std::int64_t latestNs, std::int64_t sumNs, int known) {
  if (arrivalsKnown == 0 || latestNs > latestArrivalNs || (latestNs == latestArrivalNs && rank < latestRank)) {
    latestArrivalNs = latestNs;
    latestRank = rank;
  }
  arrivalSumNs += sumNs;
  arrivalsKnown += known;
}

// Joins the group of the same call, or takes a place of its own; groups stay ordered by their
// lowest rank (the order the error message lists them in), so the result does not depend on the
// order of merging. With more calls than places, the groups of the highest ranks are dropped.
void CallSummary::place(const Group& incoming) {
  for (Group& group : groups)
    if (group.lowestRank >= 0 && sameCall(group.call, incoming.call)) {
      group.rankMask |= incoming.rankMask;
      if (incoming.lowestRank < group.lowestRank) {
        group.lowestRank = incoming.lowestRank;
        group.call = incoming.call;
      }
      std::sort(std::begin(groups), std::end(groups), byLowestRank);
      return;
    }
  Group* last = &groups[kGroups - 1];
  if (last->lowestRank >= 0) {
    flags |= kMoreCalls;
    if (incoming.lowestRank > last->lowestRank) return;
  }
  *last = incoming;
  std::sort(std::begin(groups), std::end(groups), byLowestRank);
}

}  // namespace ringsync::detail
