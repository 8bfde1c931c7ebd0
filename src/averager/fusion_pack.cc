#include "fusion_pack.h"

#include "collectives/half_convert.h"

namespace ringsync::detail {

void packBucketAsFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients, std::uint16_t* fused) {
  for (const BucketMember& member : bucket.members)
    convertFloat32ToFloat16(static_cast<const float*>(gradients[member.gradient].data), fused + member.offset,
                            member.count);
}

void unpackBucketFromFloat16(const Bucket& bucket, const std::vector<GradientSpec>& gradients,
                             const std::uint16_t* fused) {
  for (const BucketMember& member : bucket.members)
    convertFloat16ToFloat32(fused + member.offset, static_cast<float*>(gradients[member.gradient].data), member.count);
}

}  // namespace ringsync::detail
