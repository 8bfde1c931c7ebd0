// The pipelining settings of the segmented algorithms (the ring all-reduce, the chain broadcast).
#pragma once

#include <cstddef>

namespace ringsync::detail {

struct RingConfig {
  std::size_t segmentBytes;  // pipelining unit; the largest message these algorithms send
  int depth;                 // segments in flight per direction (>= 2)
};

}  // namespace ringsync::detail
