// Bucket planning for gradient fusion (Horovod's tensor fusion, PyTorch DDP's buckets).
//
// Gradients are walked in reverse registration order, the order backward produces them, and
// gathered into buckets of at most `bucketBytes` (the very first bucket at most
// `firstBucketBytes`, so communication starts early in backward). A bucket holds one element type
// in one kind of memory; each (type, memory) pair fills its own open bucket. A gradient of at
// least `bucketBytes` gets a bucket of its own and is all-reduced where it lies, without a copy.
// Buckets are then numbered in the order they become complete during backward (by their
// lowest-indexed member, descending), which is the order every rank launches them in.
//
// Inside a bucket the fused buffer holds the members in ascending gradient index. When the
// members already lie back to back in that order (one tensor, or a trainer that keeps its
// gradients in one arena), the bucket is all-reduced in place over that span instead of packed.
// The element order is the same either way, so ranks that pack and ranks that do not still agree.
//
// Pure planning: no MPI, no CUDA. Every rank computes the same plan from the same list.
#pragma once

#include <cstddef>
#include <vector>

#include "ringsync/types.h"

namespace ringsync::detail {

struct GradientSpec {
  void* data = nullptr;
  std::size_t count = 0;  // elements
  DataType type = DataType::kFloat32;
  bool onDevice = false;
};

// Device buckets start every member at a multiple of this many bytes in the fused buffer (the pack
// kernels move 16-byte vectors where source and target are both aligned); the padding elements
// are zero and never unpacked. Host buckets are dense.
inline constexpr std::size_t kDeviceMemberAlignment = 16;

struct BucketMember {
  std::size_t gradient = 0;  // index into the registration list
  std::size_t offset = 0;    // first element in the fused buffer
  std::size_t count = 0;     // elements
};

struct Bucket {
  DataType type = DataType::kFloat32;
  bool onDevice = false;
  std::vector<BucketMember> members;  // ascending gradient index, offsets ascending
  std::size_t count = 0;              // elements over all members
  // Start of the members' span when they lie back to back in member order (so no packing is
  // needed), nullptr otherwise. Also nullptr for an empty bucket.
  void* contiguousData = nullptr;
  std::size_t bytes() const { return count * dataTypeSize(type); }
  std::size_t firstGradient() const { return members.front().gradient; }  // completes the bucket
};

struct BucketPlanLimits {
  std::size_t bucketBytes = 0;       // > 0
  std::size_t firstBucketBytes = 0;  // > 0
};

// Buckets in launch order. Every gradient belongs to exactly one bucket; no bucket is empty.
std::vector<Bucket> planBuckets(const std::vector<GradientSpec>& gradients, const BucketPlanLimits& limits);

// Buckets given by the caller (GradientAveragerOptions::groups, checked by checkGroups: every
// gradient in exactly one group, one type and memory per group), laid out and ordered as
// planBuckets' are.
std::vector<Bucket> bucketsFromGroups(const std::vector<GradientSpec>& gradients,
                                      const std::vector<std::vector<std::size_t>>& groups);

// Where `bucket`'s members start when they lie back to back in `buffers` (the gradients, or the
// parameters that mirror them) at exactly their fused offsets, with no padding: then the bucket
// needs no packing. nullptr otherwise, and for a bucket of empty tensors.
void* spanOf(const Bucket& bucket, const std::vector<GradientSpec>& buffers);

// bucketOf[g] = the bucket holding gradient g.
std::vector<std::size_t> bucketOfGradient(const std::vector<Bucket>& buckets, std::size_t gradientCount);

}  // namespace ringsync::detail
