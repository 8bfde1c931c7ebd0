#include "marked_places.h"

#include <iterator>

namespace ringsync::detail {

// The places are disjoint: only the one starting last at or before `begin`, and the one starting
// first after it, can overlap the range.
std::optional<MarkedPlaces::Place> MarkedPlaces::overlapping(const void* data, std::size_t bytes) const {
  const auto begin = reinterpret_cast<std::uintptr_t>(data), end = begin + bytes;
  auto after = byBegin_.upper_bound(begin);
  if (after != byBegin_.end() && after->second.begin < end) return after->second;
  if (after != byBegin_.begin() && std::prev(after)->second.end > begin) return std::prev(after)->second;
  return std::nullopt;
}

void MarkedPlaces::add(std::size_t index, const void* data, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  byBegin_[begin] = Place{index, begin, begin + bytes};
}

}  // namespace ringsync::detail
