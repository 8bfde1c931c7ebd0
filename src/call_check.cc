#include "call_check.h"

#include <cstddef>
#include <cmath>
#include <cstring>

#include <string>
#include <vector>

#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

// Ranks that made the same call, in ascending order.
struct CallGroup {
  CallHeader call;
  std::vector<int> ranks;
};

std::string listRanks(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

// Groups ranks by the call they made. Rank 0's group comes first; the others follow in order of
// their lowest rank, so every rank builds the same list from the same headers.
std::vector<CallGroup> groupByCall(const RoundTransport& exchange) {
  std::vector<CallGroup> groups;
  for (int r = 0; r < exchange.size(); ++r) {
    const CallHeader& header = exchange.header(r);
    bool placed = false;
    for (CallGroup& group : groups)
      if (sameCall(group.call, header)) {
        group.ranks.push_back(r);
        placed = true;
        break;
      }
    if (!placed) groups.push_back({header, {r}});
  }
  return groups;
}

}  // namespace

void reportCallMismatch(const RoundTransport& exchange) {
  const std::vector<CallGroup> groups = groupByCall(exchange);
  if (groups.size() == 1) return;
  // The ranks that differ from rank 0 first ("rank 2 called ...; ranks 0, 1 called ..."): with one
  // odd rank out, the culprit is named first whichever rank it is.
  std::string message;
  for (std::size_t g = 1; g <= groups.size(); ++g) {
    const CallGroup& group = groups[g % groups.size()];
    message += (message.empty() ? "" : "; ") + listRanks(group.ranks) + " called " + describeCall(group.call);
  }
  throw MismatchError("ranks disagree about a collective: " + message);
}

namespace {

std::vector<int> ranksIn(std::uint64_t mask) {
  std::vector<int> ranks;
  for (int r = 0; r < CallSummary::kMaskRanks; ++r)
    if (mask & (std::uint64_t{1} << r)) ranks.push_back(r);
  return ranks;
}

const char* incompleteNote(const CallSummary& summary, std::uint32_t beyondFlag) {
  return (summary.flags & beyondFlag) ? " (ranks from 64 on are not listed)" : "";
}

}  // namespace

void reportSummaryMismatch(const CallSummary& summary) {
  int groups = 0;
  while (groups < CallSummary::kGroups && summary.groups[groups].lowestRank >= 0) ++groups;
  if (!summary.disagrees() || groups == 0) return;
  // In reportCallMismatch's order: the groups apart from rank 0's (the lowest rank's) first.
  std::string message;
  for (int g = 1; g <= groups; ++g) {
    const CallSummary::Group& group = summary.groups[g % groups];
    message += (message.empty() ? "" : "; ") + listRanks(ranksIn(group.rankMask)) + " called " +
               describeCall(group.call);
  }
  if (summary.flags & CallSummary::kMoreCalls) message += "; other ranks made other calls";
  throw MismatchError("ranks disagree about a collective: " + message +
                      incompleteNote(summary, CallSummary::kRanksBeyondMask));
}

void reportSummaryNonFinite(const CallSummary& summary) {
  if (!summary.nonFinite()) return;
  throw NonFiniteError(describeCall(summary.firstCall()) + ": input holds NaN or Inf on " +
                       listRanks(ranksIn(summary.nonFiniteMask)) + " (RINGSYNC_CHECK_FINITE=1)" +
                       incompleteNote(summary, CallSummary::kNonFiniteBeyondMask));
}

SettingsRecord settingsRecord(const Options& options) {
  SettingsRecord record;
  record.ringSegmentBytes = options.ringSegmentBytes;
  record.ringSegmentBytesAcrossNodes = options.ringSegmentBytesAcrossNodes;
  record.smallBytes = options.smallBytes;
  record.networkLatencyBytes = options.networkLatencyBytes;
  record.reduceToLinkMillionths = static_cast<std::uint64_t>(std::llround(options.reduceToLinkRatio * 1e6));
  record.algorithm = static_cast<std::int32_t>(options.algorithm);
  record.checkCalls = options.checkCalls ? 1 : 0;
  record.checkFinite = options.checkFinite ? 1 : 0;
  record.backend = static_cast<std::int32_t>(options.backend);
  return record;
}

namespace {

// "RINGSYNC_SMALL_BYTES=1024 on rank 2, 16384 on ranks 0, 1", or "" when all ranks agree.
template <typename Field>
std::string describeDifference(const char* variable, const std::vector<SettingsRecord>& ranks, Field field) {
  std::vector<std::string> values;
  std::vector<std::vector<int>> holders;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const std::string value = field(ranks[r]);
    std::size_t v = 0;
    while (v < values.size() && values[v] != value) ++v;
    if (v == values.size()) {
      values.push_back(value);
      holders.emplace_back();
    }
    holders[v].push_back(static_cast<int>(r));
  }
  if (values.size() == 1) return "";
  std::string text = std::string(variable) + "=";
  for (std::size_t g = 1; g <= values.size(); ++g) {
    const std::size_t v = g % values.size();  // rank 0's value last, as in checkSameCall
    text += (g > 1 ? ", " : "") + values[v] + " on " + listRanks(holders[v]);
  }
  return text;
}

}  // namespace

void checkSameSettings(const std::vector<SettingsRecord>& ranks) {
  auto number = [](std::uint64_t value) { return std::to_string(value); };
  const std::string differences[] = {
      describeDifference("RINGSYNC_RING_SEGMENT_BYTES", ranks,
                         [&](const SettingsRecord& s) { return number(s.ringSegmentBytes); }),
      describeDifference("RINGSYNC_RING_SEGMENT_BYTES_ACROSS_NODES", ranks,
                         [&](const SettingsRecord& s) { return number(s.ringSegmentBytesAcrossNodes); }),
      describeDifference("RINGSYNC_SMALL_BYTES", ranks, [&](const SettingsRecord& s) { return number(s.smallBytes); }),
      describeDifference("RINGSYNC_NETWORK_LATENCY_BYTES", ranks,
                         [&](const SettingsRecord& s) { return number(s.networkLatencyBytes); }),
      describeDifference("RINGSYNC_REDUCE_TO_LINK_RATIO", ranks,
                         [](const SettingsRecord& s) { return std::to_string(s.reduceToLinkMillionths / 1e6); }),
      describeDifference("RINGSYNC_ALGO", ranks,
                         [](const SettingsRecord& s) {
                           return std::string(algorithmName(static_cast<Algorithm>(s.algorithm)));
                         }),
      describeDifference("RINGSYNC_CHECK", ranks, [&](const SettingsRecord& s) { return number(s.checkCalls); }),
      describeDifference("RINGSYNC_CHECK_FINITE", ranks,
                         [&](const SettingsRecord& s) { return number(s.checkFinite); }),
      describeDifference("RINGSYNC_BACKEND", ranks,
                         [](const SettingsRecord& s) {
                           return std::string(backendName(static_cast<BackendChoice>(s.backend)));
                         }),
  };
  std::string message;
  for (const std::string& difference : differences)
    if (!difference.empty()) message += (message.empty() ? "" : "; ") + difference;
  if (!message.empty())
    throw MismatchError("Communicator: ranks disagree about settings that must match on every rank: " + message);
}

void checkFiniteInputs(const RoundTransport& exchange) {
  std::vector<int> ranks;
  for (int r = 0; r < exchange.size(); ++r)
    if (exchange.header(r).flags & kFlagNonFiniteInput) ranks.push_back(r);
  if (!ranks.empty())
    throw NonFiniteError(describeCall(exchange.header(0)) + ": input holds NaN or Inf on " + listRanks(ranks) +
                         " (RINGSYNC_CHECK_FINITE=1)");
}

}  // namespace ringsync::detail
