// What a rank knows about the calls of the ranks whose data it has combined so far, small enough
// to ride on every message of an algorithm in which no rank hears from every other rank
// (recursive doubling: log2(n) partners). Merging is a union, independent of order, so when the
// algorithm has combined every rank's data every rank holds the same summary and reaches the same
// verdict from it, without a separate fingerprint round.
//
// Exact for up to kGroups distinct calls and ranks below 64 (what a message can name); beyond
// that it still knows that ranks disagree, and says that the list is incomplete.
#pragma once

#include <cstdint>
#include <type_traits>

#include "call_header.h"

namespace ringsync::detail {

struct CallSummary {
  static constexpr int kGroups = 2;
  static constexpr int kMaskRanks = 64;
  // Flags (OR-merged).
  static constexpr std::uint32_t kMoreCalls = 1u << 0;            // a call beyond kGroups was dropped
  static constexpr std::uint32_t kRanksBeyondMask = 1u << 1;      // ranks >= 64 are not in the masks
  static constexpr std::uint32_t kNonFiniteBeyondMask = 1u << 2;  // a rank >= 64 flagged NaN/Inf

  struct Group {
    CallHeader call;               // the call (as the group's lowest rank made it)
    std::uint64_t rankMask = 0;    // ranks < 64 that made it
    std::int32_t lowestRank = -1;  // -1: unused
    std::uint32_t reserved = 0;
  };
  Group groups[kGroups];
  std::uint64_t nonFiniteMask = 0;  // ranks < 64 whose input holds NaN/Inf (kFlagNonFiniteInput)
  std::uint32_t flags = 0;
  std::int32_t ranks = 0;  // how many ranks' calls are in here
  // Who arrived last, for the straggler report and the timeline (CallHeader::arrivalNs, 0 where a
  // rank does not measure): the latest arrival and its rank (the lowest of those tied), the sum of
  // the arrivals known and how many are known. The others waited arrived·latest - sum in all.
  std::int64_t latestArrivalNs = 0;
  std::int64_t arrivalSumNs = 0;
  std::int32_t latestRank = -1;
  std::int32_t arrivalsKnown = 0;

  // Rank `rank` (of the communicator the caller reports in) made `call`.
  void add(int rank, const CallHeader& call);
  // The union of two disjoint sets of ranks.
  void merge(const CallSummary& other);
  bool disagrees() const { return groups[1].lowestRank >= 0 || (flags & kMoreCalls) != 0; }
  bool nonFinite() const { return nonFiniteMask != 0 || (flags & kNonFiniteBeyondMask) != 0; }
  const CallHeader& firstCall() const { return groups[0].call; }
  // Every rank's arrival is in here: latestRank came last, and the others waited this long in all.
  bool everyArrivalKnown() const { return arrivalsKnown == ranks && ranks > 0; }
  std::int64_t waitedForLatestNs() const { return arrivalsKnown * latestArrivalNs - arrivalSumNs; }

 private:
  void place(const Group& group);
  void noteArrival(int rank, std::int64_t latestNs, std::int64_t sumNs, int known);
};
static_assert(std::is_trivially_copyable_v<CallSummary>, "CallSummary is sent as raw bytes");

}  // namespace ringsync::detail
