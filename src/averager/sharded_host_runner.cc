// The sharded host runner: each bucket is one reduce-scatter of its gradients and, after the
// update, one all-gather of its parameters, both over N equal blocks (shard_plan.h: block r holds
// chunk r, the all-reduce's, padded with a zero where that chunk is the shorter size).
//
//   reduce-scatter  in place over the gradients when they lie back to back and the bucket needs no
//                   padding; otherwise packed into the runner's buffer (padding zeroed), reduced
//                   there in place, and only this rank's chunk copied back (the owned ranges)
//   all-gather      in place over the parameters likewise; otherwise this rank's owned ranges are
//                   copied into its block of the buffer, gathered, and every other element copied
//                   back into the parameters
// fp16 on the wire: the pack converts, the reduce-scatter runs on float16, the owned ranges are
// converted back (the parameters are gathered as they are).
// Buckets run one at a time on one thread, so one buffer, sized for the largest, serves them all.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "collectives/half_convert.h"
#include "collectives/scratch_buffer.h"
#include "gradient_averager_runner.h"
#include "shard_plan.h"

namespace ringsync::detail {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

std::byte* at(void* base, std::size_t element, std::size_t elementBytes) {
  return static_cast<std::byte*>(base) + element * elementBytes;
}

class ShardedHostRunner final : public BucketRunner {
 public:
  explicit ShardedHostRunner(const RunnerContext& context) : context_(context), shards_(*context.shards) {
    std::size_t fusedBytes = 0;
    const std::vector<Bucket>& buckets = *context_.buckets;
    for (std::size_t b = 0; b < buckets.size(); ++b) {
      if (buckets[b].onDevice) continue;
      if (compressed(buckets[b]) || !shards_.reduceScatterInPlace(b) || !shards_.gatherInPlace(b))
        fusedBytes = std::max(fusedBytes, shards_.paddedCount(b) * dataTypeSize(buckets[b].type));
    }
    // Allocated and touched once: a per-step temporary would pay first-touch faults every step.
    if (fusedBytes > 0) fused_.reserve(fusedBytes);
  }

  void run(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    const Bucket& bucket = (*context_.buckets)[index];
    timing.collective = "reduce-scatter";
    if (bucket.count == 0) return;  // only empty tensors: nothing to send (every rank agrees)
    if (compressed(bucket)) return reduceScatterFp16(index, comm, timing);
    const std::size_t block = shards_.block(index), elementBytes = dataTypeSize(bucket.type);
    if (shards_.reduceScatterInPlace(index)) {
      timing.path = "in place";
      const auto start = Clock::now();
      comm.reduceScatter(bucket.contiguousData, at(bucket.contiguousData, context_.rank * block, elementBytes), block,
                         bucket.type, context_.op);
      timing.exchangeSeconds = secondsSince(start);
      return;
    }
    timing.path = "packed";
    auto start = Clock::now();
    for (const BucketMember& m : bucket.members) copyRuns(m, index, {0, m.count}, gradient(m), true);
    zeroPadding(index, elementBytes);
    timing.packSeconds = secondsSince(start);
    start = Clock::now();
    comm.reduceScatter(fused_.data(), fusedAt(context_.rank * block, elementBytes), block, bucket.type, context_.op);
    timing.exchangeSeconds = secondsSince(start);
    start = Clock::now();
    for (const BucketMember& m : bucket.members)
      copyRuns(m, index, shards_.owned(m, index, context_.rank), gradient(m), false);
    timing.unpackSeconds = secondsSince(start);
  }

  void gather(std::size_t index, Communicator& comm, BucketTiming& timing) override {
    const Bucket& bucket = (*context_.buckets)[index];
    timing.collective = "all-gather";
    if (bucket.count == 0) return;
    const std::size_t block = shards_.block(index), elementBytes = dataTypeSize(bucket.type);
    if (shards_.gatherInPlace(index)) {
      timing.path = "in place";
      void* span = shards_.parameterSpan(index);
      const auto start = Clock::now();
      comm.allgather(at(span, context_.rank * block, elementBytes), span, block, bucket.type);
      timing.exchangeSeconds = secondsSince(start);
      return;
    }
    timing.path = "packed";
    auto start = Clock::now();
    for (const BucketMember& m : bucket.members)
      copyRuns(m, index, shards_.owned(m, index, context_.rank), parameter(m), true);
    timing.packSeconds = secondsSince(start);
    start = Clock::now();
    comm.allgather(fusedAt(context_.rank * block, elementBytes), fused_.data(), block, bucket.type);
    timing.exchangeSeconds = secondsSince(start);
    start = Clock::now();
    for (const BucketMember& m : bucket.members) {  // the elements other ranks own: before and after this rank's
      const ShardRange own = shards_.owned(m, index, context_.rank);
      copyRuns(m, index, {0, own.begin}, parameter(m), false);
      copyRuns(m, index, {own.end, m.count}, parameter(m), false);
    }
    timing.unpackSeconds = secondsSince(start);
  }

 private:
  bool compressed(const Bucket& bucket) const { return context_.compressFp16 && bucket.type == DataType::kFloat32; }
  void* gradient(const BucketMember& m) const { return (*context_.gradients)[m.gradient].data; }
  void* parameter(const BucketMember& m) const { return (*context_.parameters)[m.gradient].data; }
  std::byte* fusedAt(std::size_t element, std::size_t elementBytes) { return at(fused_.data(), element, elementBytes); }

  // Copies elements `range` of member `m` (stored at `tensor`) into the padded buffer (`in`) or out
  // of it, run by run.
  void copyRuns(const BucketMember& m, std::size_t bucket, ShardRange range, void* tensor, bool in) {
    const std::size_t elementBytes = dataTypeSize((*context_.buckets)[bucket].type);
    shards_.forEachRun(m, bucket, range, [&](std::size_t tensorIndex, std::size_t padded, std::size_t length) {
      std::byte* mine = at(tensor, tensorIndex, elementBytes);
      std::byte* buffer = fusedAt(padded, elementBytes);
      std::memcpy(in ? buffer : mine, in ? mine : buffer, length * elementBytes);
    });
  }

  // The padding after each shorter chunk: zero, so that it sums to zero (the buffer is shared by
  // all buckets, so another one may have left values there).
  void zeroPadding(std::size_t index, std::size_t elementBytes) {
    const std::size_t block = shards_.block(index);
    for (int r = 0; r < shards_.ranks(); ++r) {
      const std::size_t length = shards_.chunk(index, r).count;
      std::memset(fusedAt(static_cast<std::size_t>(r) * block + length, elementBytes), 0,
                  (block - length) * elementBytes);
    }
  }

  void reduceScatterFp16(std::size_t index, Communicator& comm, BucketTiming& timing) {
    const Bucket& bucket = (*context_.buckets)[index];
    const std::size_t block = shards_.block(index);
    auto* wire = reinterpret_cast<std::uint16_t*>(fused_.data());
    timing.path = "fp16";
    auto start = Clock::now();
    for (const BucketMember& m : bucket.members)
      shards_.forEachRun(m, index, {0, m.count}, [&](std::size_t i, std::size_t padded, std::size_t length) {
        convertFloat32ToFloat16(static_cast<const float*>(gradient(m)) + i, wire + padded, length);
      });
    zeroPadding(index, sizeof(std::uint16_t));
    timing.packSeconds = secondsSince(start);
    start = Clock::now();
    comm.reduceScatter(wire, wire + context_.rank * block, block, DataType::kFloat16, context_.op);
    timing.exchangeSeconds = secondsSince(start);
    start = Clock::now();
    for (const BucketMember& m : bucket.members)
      shards_.forEachRun(m, index, shards_.owned(m, index, context_.rank),
                         [&](std::size_t i, std::size_t padded, std::size_t length) {
                           convertFloat16ToFloat32(wire + padded, static_cast<float*>(gradient(m)) + i, length);
                         });
    timing.unpackSeconds = secondsSince(start);
  }

  RunnerContext context_;
  const ShardPlan& shards_;
  ScratchBuffer fused_;  // the largest packed bucket, padded
};

}  // namespace

std::unique_ptr<BucketRunner> makeShardedHostRunner(const RunnerContext& context) {
  return std::make_unique<ShardedHostRunner>(context);
}

}  // namespace ringsync::detail
