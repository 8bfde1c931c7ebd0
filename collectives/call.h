// One collective call, as every layer below the public API sees it: each public method fills one
// Call, the core runs it through one pipeline (src/call_pipeline.cc), the algorithms and the NCCL
// wrapper take it as it is.
//
// `count` is the count the public call was given, as NCCL counts it:
//   kAllreduce      send and recv hold `count` elements
//   kReduceScatter  recv holds `count` (this rank's block), send holds count · ranks
//   kAllgather      send holds `count` (this rank's block), recv holds count · ranks
//   kBroadcast      recv (== send) holds `count` elements, root's are copied everywhere
//   kBarrier        no buffers, count 0
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
  // Elements of send and of recv, by kind (the table above).
  std::size_t sendCount(int ranks) const {
    return kind == CollectiveKind::kReduceScatter ? count * static_cast<std::size_t>(ranks) : count;
  }
  std::size_t recvCount(int ranks) const {
    return kind == CollectiveKind::kAllgather ? count * static_cast<std::size_t>(ranks) : count;
  }
  bool reduces() const { return kind == CollectiveKind::kAllreduce || kind == CollectiveKind::kReduceScatter; }
};

}  // namespace ringsync::detail
