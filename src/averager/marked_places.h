// Where this step's marked host gradients lie, so that a gradient that moved (markReadyAt) cannot
// overlap another one of the same step: two gradients in one buffer would be reduced twice.
//
// Kept only once some gradient has moved: the registered places were checked against each other
// at construction, so until a move nothing can overlap. A place is checked against the gradients
// already marked in this step, not against those still to be marked: libtorch frees every .grad
// before backward, and its allocator may hand a new gradient the memory an unmarked one held last
// step (that one moves too when it is marked, and is checked then). Empty and device gradients
// are never kept (empty ones may lie anywhere; device ones cannot move).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "bucket_plan.h"

namespace ringsync::detail {

class MarkedPlaces {
 public:
  struct Place {
    std::size_t index;
    std::uintptr_t begin, end;
  };
  bool tracking() const { return tracking_; }
  // The first move: from now on, starting with the places of the gradients marked so far.
  void startTracking(const std::vector<GradientSpec>& gradients, const std::vector<bool>& marked);
  // A gradient marked in this step whose place overlaps `g` lying at `data`; none while not
  // tracking, or for an empty or device gradient.
  std::optional<Place> overlapping(const GradientSpec& g, const void* data) const;
  void add(std::size_t index, const GradientSpec& g);  // just marked, at g.data (checked first)
  void clear() { byBegin_.clear(); }                   // the step ended

 private:
  bool tracking_ = false;
  std::map<std::uintptr_t, Place> byBegin_;  // disjoint
};

}  // namespace ringsync::detail
