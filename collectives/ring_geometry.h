// How a buffer of `count` elements is cut for the ring: n chunks (the slice each rank ends up
// owning; sizes differ by at most one element) and, within each chunk, `segments` pieces (the
// pipelining unit; every chunk has the same number so every step has matching sends and receives).
#pragma once

#include <cstddef>

namespace ringsync::detail {

struct ElementRange {
  std::size_t begin = 0;
  std::size_t count = 0;
};

class RingGeometry {
 public:
  RingGeometry(std::size_t count, int ranks, std::size_t elementBytes, std::size_t segmentBytes);

  ElementRange chunk(int c) const;
  ElementRange segment(int c, std::size_t s) const;  // absolute element range of segment s of chunk c
  std::size_t segmentsPerChunk() const { return segments_; }
  int ranks() const { return ranks_; }

 private:
  std::size_t count_;
  int ranks_;
  std::size_t segments_;
};

}  // namespace ringsync::detail
