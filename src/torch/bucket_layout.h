// Which parameters share a bucket, and where each one's gradient lies in it (torch's DDP
// buckets; GradientAverager's plan for memory it does not own). Parameters are walked in reverse
// registration order, the order backward produces their gradients, and gathered into buckets of
// at most `bucketBytes` (the very first at most `firstBucketBytes`, so that communication starts
// early in backward); a bucket holds one dtype on one device, and a parameter of `bucketBytes`
// or more gets a bucket of its own. Inside a bucket the gradients lie back to back in ascending
// parameter order. Buckets are numbered in launch order: the order backward completes them.
// Pure planning: every rank computes the same plan from the same model.
#pragma once

#include <cstddef>
#include <vector>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace ringsync::torch::detail {

struct ParameterShape {
  std::size_t count = 0;  // elements
  c10::ScalarType dtype = c10::kFloat;
  c10::Device device = c10::Device(c10::kCPU);
};

struct BucketLayout {
  c10::ScalarType dtype = c10::kFloat;
  c10::Device device = c10::Device(c10::kCPU);
  std::vector<std::size_t> parameters;  // ascending
  std::vector<std::size_t> offsets;     // first element of each parameter's gradient
  std::size_t count = 0;                // elements
};

std::vector<BucketLayout> planBuckets(const std::vector<ParameterShape>& parameters, std::size_t bucketBytes,
                                      std::size_t firstBucketBytes);

}  // namespace ringsync::torch::detail
