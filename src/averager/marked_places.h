// Where this step's marked host gradients lie, so that a gradient that moved (markReadyAt) cannot
// overlap another one of the same step: two gradients in one buffer would be reduced twice.
//
// Kept only once some gradient has moved: the registered places were checked against each other
// at construction, so until a move nothing can overlap. A place is checked against the gradients
// already marked in this step, not against those still to be marked: libtorch frees every .grad
// before backward, and its allocator may hand a new gradient the memory an unmarked one held last
// step (that one moves too when it is marked, and is checked then).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

namespace ringsync::detail {

class MarkedPlaces {
 public:
  struct Place {
    std::size_t index;
    std::uintptr_t begin, end;
  };
  bool tracking() const { return tracking_; }
  void startTracking() { tracking_ = true; }
  // A marked gradient whose place overlaps [data, data + bytes), if any (bytes > 0).
  std::optional<Place> overlapping(const void* data, std::size_t bytes) const;
  void add(std::size_t index, const void* data, std::size_t bytes);  // bytes > 0, checked first
  void clear() { byBegin_.clear(); }                                 // the step ended

 private:
  bool tracking_ = false;
  std::map<std::uintptr_t, Place> byBegin_;  // disjoint
};

}  // namespace ringsync::detail
