// float32 gradients sent as float16 (GradientAveragerOptions::compressFp16): the conversion is the
// pack into the bucket's wire buffer, one pass each way. (Buckets of any other kind are never
// packed by the averager: the core reduces them where they lie, or packs them itself.)
#pragma once

#include <cstddef>
#include <cstdint>

#include "bucket_plan.h"

namespace ringsync::detail {

// float32 bucket -> float16 fused buffer (round to nearest even) and back. bucket.type must be
// kFloat32; `fused` holds bucket.count float16 values.
void packBucketAsFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients, std::uint16_t* fused);
void unpackBucketFromFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients,
                             const std::uint16_t* fused);


}  // namespace ringsync::detail
