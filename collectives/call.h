// One collective call, as every layer below the public API sees it: each public method fills one
// Call, the core runs it through one pipeline (src/call_pipeline.cc), the algorithms and the NCCL
// wrapper take it as it is.
//
// `count` is the count the public call was given, as NCCL counts it; what send and recv hold for
// it is the kind's BufferShape (collective_kinds.h).
#pragma once

#include <cstddef>

#include "call_header.h"
#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::detail {

class ScatteredBuffer;

struct Call {
  CollectiveKind kind = CollectiveKind::kBarrier;
  const void* send = nullptr;  // == recv: in place (reduce-scatter: recv is send's block of this rank;
  void* recv = nullptr;        //  all-gather: send is recv's block of this rank)
  std::size_t count = 0;
  DataType type = DataType::kUInt8;
  ReduceOp op = ReduceOp::kSum;   // reducing collectives only
  int root = -1;                  // broadcast only
  CUstream_st* stream = nullptr;  // device buffers: the call is ordered on it (nullptr: complete on return)
  // Set instead of send/recv for an all-reduce in place over host memory stored as spans (the
  // GradientAverager's buckets, scattered_buffer.h): no argument rules, no pointer classification.
  const ScatteredBuffer* scattered = nullptr;

  std::size_t elementBytes() const { return dataTypeSize(type); }
  // Bytes of this rank's block: `count` elements.
  std::size_t blockBytes() const { return count * elementBytes(); }
  const CollectiveTraits& traits() const { return traitsOf(kind); }
  // Elements of send and of recv (the kind's BufferShape).
  std::size_t sendCount(int ranks) const { return sendElements(traits().shape, count, ranks); }
  std::size_t recvCount(int ranks) const { return recvElements(traits().shape, count, ranks); }
  bool reduces() const { return traits().reduces; }
};

}  // namespace ringsync::detail
