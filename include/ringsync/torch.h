// ringsync for libtorch programs (target ringsync::torch, `find_package(ringsync REQUIRED
// COMPONENTS torch)`): torch tensors on a Communicator, and DistributedDataParallel, which keeps
// the replicas of any torch::nn::Module in step.
//
//   ringsync::MpiEnvironment mpi(&argc, &argv);
//   ringsync::Communicator comm(MPI_COMM_WORLD);
//   Net net;                                               // any torch::nn::Module
//   ringsync::torch::DistributedDataParallel ddp(comm, *net);  // rank 0's weights everywhere
//   torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
//   for each step:
//     optimizer.zero_grad();                               // the default (set_to_none) is fine
//     loss_on_this_ranks_shard.backward();                 // buckets start during backward
//     ddp.synchronize();                                   // every .grad = the average over ranks
//     optimizer.step();
//
// The namespace is ringsync::torch: after `using namespace ringsync;` write ::torch for libtorch
// (and use TORCH_MODULE outside namespace ringsync).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"
#include "ringsync/types.h"

namespace torch::nn {
class Module;
}

namespace ringsync::torch {

// torch's dtypes as ringsync's: kChar int8, kByte uint8, kInt int32, kUInt32 uint32, kLong int64,
// kUInt64 uint64, kHalf float16, kBFloat16 bfloat16, kFloat float32, kDouble float64. Others
// (bool, int16, complex, float8) have no ringsync type: nullopt.
std::optional<DataType> dataTypeOf(c10::ScalarType dtype);
c10::ScalarType scalarTypeOf(DataType type);

// One tensor, in place: a contiguous CPU tensor, or a CUDA tensor (ordered on torch's current
// stream of its device, like NCCL in torch). InvalidArgument naming the dtype, device or layout
// that ringsync cannot carry, before anything is sent. broadcast carries any dtype (as bytes).
void allreduce(Communicator& comm, const at::Tensor& tensor, ReduceOp op = ReduceOp::kAvg);
void broadcast(Communicator& comm, const at::Tensor& tensor, int root);

struct DistributedDataParallelOptions {
  std::size_t bucketBytes = 0;       // 0: the communicator's Options::bucketBytes
  std::size_t firstBucketBytes = 0;  // 0: Options::firstBucketBytes (small, so backward overlaps early)
  // Start buckets during backward (needs MPI_THREAD_MULTIPLE). Unset: where it can gain
  // (GradientAveragerOptions::overlap: on a GPU, across nodes, or with two CPUs per rank).
  // overlapping() says the choice.
  std::optional<bool> overlap;
};

// Data parallelism for one torch::nn::Module, as torch's own DDP (its Reducer) does it in Python:
//  - Construction is collective: every rank must hold the same model (parameter and buffer names,
//    shapes, dtypes; MismatchError naming the ranks otherwise). Rank 0's parameters and buffers are
//    copied to every rank. Parameters with requires_grad (float16, bfloat16, float32, float64; CPU
//    or one CUDA device per rank) are grouped into buckets, each one tensor that DDP owns, in
//    reverse order (the order backward produces gradients), the first one small.
//  - A hook after each parameter's gradient accumulation (autograd's AccumulateGrad, as torch's
//    Reducer) places the gradient in its bucket; when a bucket is complete its all-reduce starts
//    (GradientAverager's progress thread) while backward goes on, or, without overlap (see
//    DistributedDataParallelOptions::overlap), in synchronize().
//  - Gradients start in the buckets: from construction on each .grad is a view of its bucket
//    (gradient_as_bucket_view; zeros unless the parameter had a gradient), and
//    zero_grad(set_to_none=false) keeps them there: backward accumulates straight into the
//    bucket. With the default set_to_none, backward makes a new .grad; a CPU one is averaged where
//    it lies (GradientAverager::markReadyAt: nothing is copied; on one node the bucket is reduced
//    over the tensors themselves), a CUDA one is copied into its bucket and replaced by the view.
//    A CPU bucket that the core would have to pack anyway (a small bucket below the split
//    all-reduce's threshold, the ring across nodes, a bucket beyond a shared-memory slot) is told
//    so by its first step and from then on gets its gradients copied into the bucket instead (one
//    pass, not a pack and an unpack). Gradients that are not contiguous are copied too.
//    lastStepBuckets() says which path each bucket took.
//  - A parameter that got no gradient in a step (unused in this rank's forward) counts as zero.
//  - Each backward is followed by synchronize() (or accumulated inside a noSync() scope); a second
//    backward before it raises InvalidArgument naming the parameter.
// Not thread-safe; one backward at a time. Between backward and the end of synchronize() the
// .grad tensors must not be replaced or written. Destroying it removes the hooks; the .grad views
// stay valid (they keep their bucket alive).
class DistributedDataParallel {
 public:
  DistributedDataParallel(const Communicator& comm, ::torch::nn::Module& module,
                          const DistributedDataParallelOptions& options = {});
  ~DistributedDataParallel();  // removes the hooks, waits for buckets in flight; never throws

  DistributedDataParallel(DistributedDataParallel&&) noexcept;
  DistributedDataParallel& operator=(DistributedDataParallel&&) noexcept;
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // Waits for every bucket; afterwards every parameter's .grad holds the average over the ranks.
  // Raises what the averager raises (TimeoutError, MismatchError, ...).
  void synchronize();

  // Copies rank 0's buffers (BatchNorm's running statistics, ...) to every rank (collective).
  void broadcastBuffers();

  // While alive, backward accumulates gradients in the buckets without starting any all-reduce
  // (gradient accumulation over micro-batches, torch's no_sync()); the backward after it ends
  // starts them as usual. Only around backward, never around synchronize().
  class NoSync {
   public:
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    friend class DistributedDataParallel;
    explicit NoSync(DistributedDataParallel& ddp);
    DistributedDataParallel& ddp_;
  };
  [[nodiscard]] NoSync noSync();

  std::size_t parameterCount() const;  // parameters with requires_grad, in the buckets
  std::size_t bucketCount() const;
  bool overlapping() const;  // buckets start during backward (DistributedDataParallelOptions::overlap)
  std::vector<std::size_t> bucketSizes() const;  // elements per bucket, in launch order
  GradientAveragerStats stats() const;
  std::vector<BucketTiming> lastStepBuckets() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringsync::torch
