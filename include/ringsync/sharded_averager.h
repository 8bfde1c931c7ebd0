// ShardedGradientAverager: sharded data parallelism (ZeRO stage 1/2, FSDP's SHARD_GRAD_OP). The
// gradients are fused into the same buckets as GradientAverager's and each bucket is
// reduce-scattered instead of all-reduced, as soon as backward completes it; each rank then holds
// the averaged gradient of the elements it owns, updates only those parameters (keeping optimizer
// state for them alone: 1/N of it), and the parameters are all-gathered bucket by bucket, so
// every rank ends the step with the same full parameters, bit for bit.
//
//   ringsync::ShardedGradientAverager sharded(comm, gradients, parameters);
//   for each step:
//     forward:  sharded.waitForParameter(i) before parameter i is used (or gatherParameters())
//     backward: as gradient i is written, sharded.markReady(i);
//     sharded.synchronize();            // gradient i holds the average on sharded.shard(i)
//     for each i: update parameter i on sharded.shard(i) only; sharded.markUpdated(i);
//
// The partition (decided at construction, the same on every rank, and compared between the ranks
// then, so a rank that disagrees fails before any byte moves): bucket b's fused array of C
// elements (its gradients in ascending index, back to back; GradientAverager::bucketAssignment()
// and lastStepBuckets() describe the buckets) is cut into N chunks as the all-reduce cuts it:
// chunk r holds floor(C / N) elements, one more for the first C mod N ranks, in rank order; rank r
// owns chunk r, that is of tensor i, which starts at element o of its bucket, the elements
// [begin(r) - o, end(r) - o) clipped to [0, count). A tensor smaller than N, or one that ends at a
// chunk boundary, is owned by fewer ranks; a rank may own nothing of a tensor (an empty range) or
// of a whole bucket. For example, tensors of 5, 4 and 1 elements in one bucket at N = 4: chunks of
// 3, 3, 2, 2; rank 0 owns tensor 0's [0, 3), rank 1 its [3, 5) and tensor 1's [0, 1), rank 2
// tensor 1's [1, 3), rank 3 tensor 1's [3, 4) and tensor 2's [0, 1). shard(i) and shardOf(r, i)
// answer it. (Owning the all-reduce's chunks, each element is summed over the ranks in the order a
// GradientAverager's all-reduce sums it when the core takes the same algorithm family, so sharded
// and replicated training then agree bit for bit.) Device buckets start every member at a 16-byte
// boundary (the padding belongs to no tensor). The reduce-scatter and the all-gather take N equal
// blocks of ceil(C / N): a bucket whose tensors lie back to back in memory and whose C is a
// multiple of N runs in place; any other is packed into the averager's own buffer (each shorter
// chunk padded with a zero) and back.
//
// Contract, besides GradientAverager's (same options, fusion, overlap, threads, checks):
//  - parameters[i] has gradients[i]'s count, type and memory kind; no two of all the buffers
//    overlap. Every rank starts with the same parameters (broadcast them before the first step).
//  - After synchronize(), gradient i holds the average (or sum, Options::op) on shard(i); its
//    other elements are unspecified.
//  - Between synchronize() and the gather's end the caller writes parameter i only on shard(i)
//    and only before markUpdated(i); the gather overwrites the rest of it. Every rank marks every
//    parameter (also one whose shard is empty).
//  - The next step's first markReady (or gatherParameters) ends the gather: every parameter must
//    have been marked updated by then; it waits for the gathers still in flight.
//  - compressFp16 applies to the reduce-scatter; parameters are always gathered in their own type.
//  - Device buckets: the reduce-scatters are an NCCL epoch of the averager's own communicator from
//    the step's first markReady to synchronize(), the gathers another from the first markUpdated to
//    the gather's end; other device collectives of the process wait outside them (as with a
//    GradientAverager).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"
#include "ringsync/types.h"

namespace ringsync {

// Elements [begin, end) of one tensor, in its own index space; empty when begin == end.
struct ShardRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t count() const { return end - begin; }
  bool empty() const { return begin == end; }
  bool operator==(const ShardRange& other) const { return begin == other.begin && end == other.end; }
};

class ShardedGradientAverager {
 public:
  // Collective over `comm`'s ranks: duplicates the communicator and compares the lists, settings
  // and partition between the ranks (MismatchError on every rank naming the first difference).
  // InvalidArgument, before anything is sent, for a bad buffer or a parameter that does not
  // match its gradient.
  ShardedGradientAverager(const Communicator& comm, std::vector<GradientBuffer> gradients,
                          std::vector<GradientBuffer> parameters, const GradientAveragerOptions& options = {});
  ~ShardedGradientAverager();  // finishes the buckets already started; never throws

  ShardedGradientAverager(const ShardedGradientAverager&) = delete;
  ShardedGradientAverager& operator=(const ShardedGradientAverager&) = delete;

  // --- gradients: as GradientAverager, with reduce-scatter for all-reduce.
  void markReady(std::size_t index);
  void markReady(std::size_t index, CUstream_st* stream);
  // GradientAverager's, except that a gradient that moved is refused (InvalidArgument naming it):
  // the shards are planned over the memory registered, so gradients stay there.
  void markReadyAt(std::size_t index, const void* data, CUstream_st* stream = nullptr);
  // Waits for every bucket's reduce-scatter; afterwards gradient i holds the result on shard(i).
  void synchronize();
  void averageAll();  // markReady on every gradient not yet marked, then synchronize()

  // --- the partition (local queries: no communication).
  ShardRange shard(std::size_t index) const;              // this rank's elements of tensor `index`
  ShardRange shardOf(int rank, std::size_t index) const;  // any rank's
  // The shard of the tensor whose gradient or parameter starts at `data`; InvalidArgument naming
  // the pointer when it is neither (a tensor this averager does not hold).
  ShardRange shard(const void* data) const;
  std::size_t shardElements() const;  // sum of shard(i).count() over the tensors: this rank's update

  // --- parameters, after synchronize().
  // Parameter `index` is updated on shard(index): its bucket's all-gather starts once all of the
  // bucket's parameters are marked (buckets gather in the order forward uses them: the one holding
  // tensor 0 first). For device parameters, the update was enqueued on `stream`.
  void markUpdated(std::size_t index);
  void markUpdated(std::size_t index, CUstream_st* stream);
  // Blocks until parameter `index` holds the full gathered parameter. During the gather, every
  // parameter of its bucket and of the buckets gathered before it must have been marked updated
  // (InvalidArgument naming one that was not); outside the gather it returns at once.
  void waitForParameter(std::size_t index);
  // Device parameters: `stream` waits for the gather (the host only until it is enqueued); host
  // parameters: as waitForParameter(index).
  void waitForParameter(std::size_t index, CUstream_st* stream);
  // markUpdated on every parameter not yet marked, then waits for every gather: afterwards every
  // parameter is complete. Outside the gather (before the first step, during backward) a no-op.
  void gatherParameters();

  std::size_t gradientCount() const;
  std::size_t bucketCount() const;
  std::vector<std::size_t> bucketAssignment() const;
  bool overlapping() const;
  GradientAveragerStats stats() const;
  // The last completed step (its gather included): bucketCount() reduce-scatters in launch order,
  // then bucketCount() all-gathers in gather order (BucketTiming::collective says which).
  std::vector<BucketTiming> lastStepBuckets() const;

 private:
  std::unique_ptr<GradientAverager::Impl> impl_;
};

}  // namespace ringsync
