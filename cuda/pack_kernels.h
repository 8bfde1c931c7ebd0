// Batched pack/unpack between many gradient tensors and one fusion buffer, in ONE kernel launch
// (Horovod's batched memcpy). Leaves of the layer tree: they take a stream, never synchronise and
// know nothing of MPI or NCCL. Compiled only when RINGSYNC_WITH_CUDA.
#pragma once

#include <cstddef>

#include "ringsync/types.h"

struct CUstream_st;

namespace ringsync::cuda {

// One tensor's place in a fusion buffer. Offsets and sizes are in elements of the batch's type.
struct PackEntry {
  void* tensor;              // device pointer to the tensor
  std::size_t bufferOffset;  // where it starts in the fusion buffer, in elements
  std::size_t count;         // elements
};

// Device-resident table of entries for a launch; PackPlan uploads it once (entries are fixed for
// the life of a GradientAverager), so each step's pack/unpack is a single launch with no copy.
// The table is uploaded to the device current at construction; pack/unpack run on a stream of that
// device. Tensors and fusion buffer must not overlap. Entries may be empty (count 0).
class PackPlan {
 public:
  // InvalidArgument for an invalid type or a null tensor with count > 0; BackendError when the
  // upload fails.
  PackPlan(const PackEntry* hostEntries, std::size_t entryCount, DataType type);
  ~PackPlan();
  PackPlan(const PackPlan&) = delete;
  PackPlan& operator=(const PackPlan&) = delete;

  // fusionBuffer[entry.bufferOffset + i] = entry.tensor[i] * scale, for every entry (scale is
  // applied to floating-point types only; 1.0 means a plain copy).
  void pack(void* fusionBuffer, double scale, CUstream_st* stream) const;
  // entry.tensor[i] = fusionBuffer[entry.bufferOffset + i] * scale, for every entry.
  void unpack(const void* fusionBuffer, double scale, CUstream_st* stream) const;

  std::size_t entryCount() const { return entryCount_; }
  // Sum of the entries' counts (the fusion buffer's size when offsets are dense).
  std::size_t totalCount() const { return totalCount_; }

 private:
  // PackEntry[chunkCount_] in device memory: the entries cut into pieces of at most 32 KiB, so
  // that one launch balances a 10-element bias and a 10M-element weight over every SM.
  void* deviceEntries_ = nullptr;
  std::size_t entryCount_ = 0;
  std::size_t totalCount_ = 0;
  DataType type_;
  std::size_t chunkCount_ = 0;
};

}  // namespace ringsync::cuda
