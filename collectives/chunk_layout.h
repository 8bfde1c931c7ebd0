// How a buffer of `count` elements is cut among n ranks, the one layout every algorithm uses:
// n chunks (the slice each rank owns; sizes differ by at most one element, the first count % n
// one more) and, for the pipelined ring, the same number of segments in every chunk (so that every
// step has matching sends and receives).
#pragma once

#include <cstddef>

namespace ringsync::detail {

struct ElementRange {
  std::size_t begin = 0;
  std::size_t count = 0;
};

// Part `index` of `total` elements cut into `parts` nearly equal parts.
ElementRange evenPart(std::size_t total, std::size_t parts, std::size_t index);

class ChunkLayout {
 public:
  ChunkLayout(std::size_t count, int ranks) : count_(count), ranks_(ranks) {}
  ElementRange chunk(int c) const {
    return evenPart(count_, static_cast<std::size_t>(ranks_), static_cast<std::size_t>(c));
  }
  std::size_t begin(int c) const { return chunk(c).begin; }
  std::size_t length(int c) const { return chunk(c).count; }
  std::size_t count() const { return count_; }
  int ranks() const { return ranks_; }

 private:
  std::size_t count_;
  int ranks_;
};

// The ring's cut: the chunks above, each in segmentsPerChunk() segments of at most segmentBytes.
class RingGeometry : public ChunkLayout {
 public:
  RingGeometry(std::size_t count, int ranks, std::size_t elementBytes, std::size_t segmentBytes);
  ElementRange segment(int c, std::size_t s) const;  // absolute element range of segment s of chunk c
  std::size_t segmentsPerChunk() const { return segments_; }

 private:
  std::size_t segments_;
};

}  // namespace ringsync::detail
