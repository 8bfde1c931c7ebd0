// The host ring all-reduce: reduce-scatter then all-gather, segmented and pipelined over MPI
// non-blocking point-to-point. See ring_allreduce.cc for the diagram and the cost model.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "ringsync/types.h"
#include "scratch_buffer.h"
#include "transport.h"

namespace ringsync::detail {

struct RingConfig {
  std::size_t segmentBytes;  // pipelining unit; the largest message the ring sends
  int depth;                 // segments in flight per direction (>= 2)
};

struct RingGeometry;  // how `count` elements split into chunks and segments (ring_geometry.h)

// recv = op over all ranks of send (send == recv: in place). `scratch` must hold at least
// depth * segmentBytes. Every rank ends with the same bits: each chunk is reduced once, by the
// ranks along the ring in a fixed order, then copied around.
void ringAllreduce(MPI_Comm comm, int rank, int size, const void* send, void* recv, std::size_t count,
                   DataType type, ReduceOp op, const RingConfig& config, ScratchBuffer& scratch,
                   Deadline& deadline);

}  // namespace ringsync::detail
