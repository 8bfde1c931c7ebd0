#include "marked_places.h"

#include <iterator>

namespace ringsync::detail {
namespace {

bool kept(const GradientSpec& g) { return g.count > 0 && !g.onDevice; }

}  // namespace

void MarkedPlaces::startTracking(const std::vector<GradientSpec>& gradients, const std::vector<bool>& marked) {
  tracking_ = true;
  for (std::size_t g = 0; g < gradients.size(); ++g)
    if (marked[g]) add(g, gradients[g]);
}

// The places are disjoint: only the one starting last at or before `begin`, and the one starting
// first after it, can overlap the range.
std::optional<MarkedPlaces::Place> MarkedPlaces::overlapping(const GradientSpec& g, const void* data) const {
  if (!tracking_ || !kept(g)) return std::nullopt;
  const auto begin = reinterpret_cast<std::uintptr_t>(data), end = begin + g.count * dataTypeSize(g.type);
  auto after = byBegin_.upper_bound(begin);
  if (after != byBegin_.end() && after->second.begin < end) return after->second;
  if (after != byBegin_.begin() && std::prev(after)->second.end > begin) return std::prev(after)->second;
  return std::nullopt;
}

void MarkedPlaces::add(std::size_t index, const GradientSpec& g) {
  if (!tracking_ || !kept(g)) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(g.data);
  byBegin_[begin] = Place{index, begin, begin + g.count * dataTypeSize(g.type)};
}

}  // namespace ringsync::detail
