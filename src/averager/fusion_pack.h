// Host pack/unpack between a bucket's gradients and its fused buffer, one pass each way: the
// averaging itself happens inside the all-reduce (ReduceOp::kAvg divides once, on the chunk a rank
// owns, fused into the ring's last reduce-scatter step), so packing is a plain copy. With fp16
// wire compression the conversion float32 <-> float16 is that same single pass.
#pragma once

#include <cstddef>
#include <cstdint>

#include "bucket_plan.h"

namespace ringsync::detail {

// fused[member.offset ...] = gradient, for every member of `bucket` (elements of bucket.type).
void packBucket(const Bucket& bucket, const std::vector<GradientSpec>& gradients, void* fused);
// gradient = fused[member.offset ...], for every member.
void unpackBucket(const Bucket& bucket, const std::vector<GradientSpec>& gradients, const void* fused);

// float32 bucket -> float16 fused buffer (round to nearest even) and back. bucket.type must be
// kFloat32; `fused` holds bucket.count float16 values.
void packBucketAsFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients, std::uint16_t* fused);
void unpackBucketFromFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients,
                             const std::uint16_t* fused);

// The conversions over one array (used by the above; exposed for tests).
void convertFloat32ToFloat16(const float* in, std::uint16_t* out, std::size_t count);
void convertFloat16ToFloat32(const std::uint16_t* in, float* out, std::size_t count);

}  // namespace ringsync::detail
