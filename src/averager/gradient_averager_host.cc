// The host runner: a bucket whose members lie back to back is all-reduced in place; otherwise it
// is packed into one persistent fused buffer, all-reduced there and unpacked, one pass each way.
#include <algorithm>
#include <cstdint>

#include "fusion_pack.h"
#include "collectives/scratch_buffer.h"
#include "gradient_averager_runner.h"

namespace ringsync::detail {
namespace {

bool sentAsFloat16(const Bucket& bucket, bool compressFp16) {
  return compressFp16 && bucket.type == DataType::kFloat32;
}

class HostRunner final : public BucketRunner {
 public:
  explicit HostRunner(const RunnerContext& context) : context_(context) {
    std::size_t fusedBytes = 0;
    for (const Bucket& bucket : *context_.buckets) {
      if (bucket.onDevice) continue;
      if (sentAsFloat16(bucket, context_.compressFp16))
        fusedBytes = std::max(fusedBytes, bucket.count * sizeof(std::uint16_t));
      else if (bucket.contiguousData == nullptr)
        fusedBytes = std::max(fusedBytes, bucket.bytes());
    }
    // Allocated and touched once: a per-step temporary would pay first-touch faults every step.
    if (fusedBytes > 0) fused_.reserve(fusedBytes);
  }

  void run(std::size_t index, Communicator& comm) override {
    const Bucket& bucket = (*context_.buckets)[index];
    const std::vector<GradientSpec>& gradients = *context_.gradients;
    if (bucket.count == 0) return;  // only empty tensors: nothing to send (every rank agrees)
    if (sentAsFloat16(bucket, context_.compressFp16)) {
      auto* wire = reinterpret_cast<std::uint16_t*>(fused_.data());
      packBucketAsFloat16(bucket, gradients, wire);
      comm.allreduce(wire, wire, bucket.count, DataType::kFloat16, context_.op);
      unpackBucketFromFloat16(bucket, gradients, wire);
    } else if (bucket.contiguousData != nullptr) {
      comm.allreduce(bucket.contiguousData, bucket.contiguousData, bucket.count, bucket.type, context_.op);
    } else {
      packBucket(bucket, gradients, fused_.data());
      comm.allreduce(fused_.data(), fused_.data(), bucket.count, bucket.type, context_.op);
      unpackBucket(bucket, gradients, fused_.data());
    }
  }

 private:
  RunnerContext context_;
  ScratchBuffer fused_;
};

}  // namespace

std::unique_ptr<BucketRunner> makeHostRunner(const RunnerContext& context) {
  return std::make_unique<HostRunner>(context);
}

}  // namespace ringsync::detail
