// GradientAverager: averages a model's gradients across ranks every step, fusing many small
// tensors into buckets (Horovod's tensor fusion, DDP's buckets) and starting each bucket's
// all-reduce as soon as backward has produced all of its gradients, so communication overlaps
// the rest of backward.
//
//   ringsync::GradientAverager averager(comm, {{w1.data(), w1.size(), DataType::kFloat32}, ...});
//   for each step:
//     backward: as gradient i is written, averager.markReady(i);
//     averager.synchronize();   // every gradient now holds the average over the ranks
//     optimizer step
//
// Buckets are formed in reverse registration order (the order backward produces gradients),
// the first one small (Options::firstBucketBytes) so communication starts early. A gradient
// larger than a bucket is all-reduced in place, without a copy; so is a bucket whose gradients
// already lie back to back in registration order (a trainer that keeps them in one arena). Any
// other host bucket is reduced where its gradients lie when the ranks share a node (the split
// all-reduce reads and writes the tensors themselves: no fused copy), and packed into one buffer
// and back otherwise. lastStepBuckets() says which path each bucket took and where its time went.
// Buckets launch in the order backward completes them, the same order on every rank. Every rank
// must register the same list (count, type and host/device memory per gradient, in the same
// order) with the same options; otherwise the first call (markReady, synchronize or averageAll:
// it is collective) raises MismatchError on every rank naming the difference, and so does every
// later call.
//
// Threads: overlap (GradientAveragerOptions::overlap) uses a background progress thread for host
// buffers, which needs MPI initialised with MPI_THREAD_MULTIPLE (MpiEnvironment asks for it). With
// a lower level the averager logs a warning once and runs every bucket inside synchronize()
// instead (fused, not overlapped). Device buffers use a dedicated CUDA stream ordered by events.
// markReady/synchronize are called from one thread; the gradients must not be written between
// markReady(i) and synchronize().
//
// Sharded data parallelism (reduce-scatter the buckets, update a shard, all-gather the
// parameters): ShardedGradientAverager (ringsync/sharded_averager.h), with the same options.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "ringsync/communicator.h"
#include "ringsync/types.h"

namespace ringsync {

struct GradientBuffer {
  // Host or device memory, owned by the caller, alive as long as the averager (or until
  // markReadyAt hands it the gradient's new place).
  void* data = nullptr;
  std::size_t count = 0;  // elements (0 is allowed)
  DataType type = DataType::kFloat32;
};

struct GradientAveragerOptions {
  std::size_t bucketBytes = 0;       // 0: the communicator's Options::bucketBytes (RINGSYNC_BUCKET_BYTES)
  std::size_t firstBucketBytes = 0;  // 0: Options::firstBucketBytes (RINGSYNC_FIRST_BUCKET_BYTES)
  // Start buckets during backward (host buckets need MPI_THREAD_MULTIPLE). Unset: where it can
  // gain, which is when a bucket is in device memory, when the ranks span nodes, or when this rank
  // has two CPUs or more to itself (its affinity mask, and its share of the node's CPUs). On one
  // node a host bucket's all-reduce is CPU work: with one CPU per rank (mpirun's --bind-to core)
  // the progress thread only takes time from backward. overlapping() says the choice.
  std::optional<bool> overlap;
  // kAvg divides by the number of ranks. kSum leaves the sum, for callers that pre-scale their
  // gradients (e.g. by local_batch / global_batch when ranks hold unequal shares of a batch).
  ReduceOp op = ReduceOp::kAvg;
  // Send float32 gradients as float16 on the wire (Horovod's Compression.fp16). Off by default.
  // Host buffers only (device buckets go as they are). Sums are accumulated in float32 and
  // rounded to float16 at every ring step, so values beyond float16's range (65504) overflow.
  bool compressFp16 = false;
  // The buckets, given (Horovod's `groups`, a DDP's own buckets): each inner list names the
  // gradients fused into one bucket, every gradient in exactly one list, one element type and
  // one kind of memory per list (InvalidArgument naming the list otherwise). Inside a bucket the
  // members lie in ascending index; buckets launch by their lowest index, highest first (the
  // order backward completes them). Empty: buckets planned from bucketBytes/firstBucketBytes.
  // Every rank must give the same lists (MismatchError otherwise).
  std::vector<std::vector<std::size_t>> groups;
};

struct GradientAveragerStats {
  std::size_t buckets = 0;             // bucket count (fixed at construction)
  std::size_t steps = 0;               // synchronize() calls so far
  double lastSynchronizeSeconds = 0;   // time the caller spent blocked in the last synchronize()
  double totalSynchronizeSeconds = 0;  // ... summed over all steps
  // Bytes this rank sends per step by the ring's count (what a bandwidth-optimal algorithm moves;
  // the one the core picks per bucket may move more, e.g. the one-round exchange of a small one):
  // an all-reduce of S bytes 2(N-1)/N * S, a reduce-scatter and an all-gather (N-1)/N * S each
  // (S padded to N equal blocks); S as sent (float16 with compressFp16). 0 on one rank.
  std::size_t wireBytesPerStep = 0;
};

// Where one bucket's time went in the last step (GradientAverager::lastStepBuckets()), to find what
// limits the averager. Host clocks: for device buckets the times are
// those of enqueueing the work, not of the work.
struct BucketTiming {
  std::size_t bytes = 0;
  std::size_t gradients = 0;
  // "in place" (the members lie back to back), "scattered" (reduced where the gradients lie, no
  // copy), "packed" (copied into one buffer and back), "fp16" (packed as float16), "device".
  const char* path = "";
  const char* collective = "all-reduce";  // "reduce-scatter" or "all-gather" (ShardedGradientAverager)
  double queuedSeconds = 0;               // from the bucket being complete (with overlap: its last markReady;
                                          // without: synchronize() starting) to the start of its exchange
  double packSeconds = 0;
  double exchangeSeconds = 0;  // the all-reduce ("scattered": reading and writing the gradients too)
  double unpackSeconds = 0;
};

class GradientAverager {
 public:
  // Collective over `comm`'s ranks: duplicates the communicator, so the averager's traffic never
  // mixes with calls the caller makes on `comm` itself.
  GradientAverager(const Communicator& comm, std::vector<GradientBuffer> gradients,
                   const GradientAveragerOptions& options = {});
  ~GradientAverager();  // waits for buckets in flight; never throws

  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  // Gradient `index` is final for this step. Raises InvalidArgument for an index out of range,
  // marked twice in one step, or (once a gradient has moved, markReadyAt) lying over another
  // gradient already marked in this step.
  void markReady(std::size_t index);
  // Device gradients: gradient `index` is produced by work enqueued on `stream` (markReady(index)
  // means the legacy default stream). The averager's stream waits on an event recorded there; the
  // call never blocks the host. For host gradients the stream is ignored.
  void markReady(std::size_t index, CUstream_st* stream);
  // markReady for a framework that may move gradients between steps (libtorch's zero_grad() frees
  // every .grad by default, and backward allocates new ones): `data` is where gradient `index`
  // lies now, same count and type. A host gradient that moved is reduced where it lies, from this
  // step until it moves again (its bucket's spans are bound anew, nothing is copied); the old
  // memory is not touched again. `data` stays gradient `index`'s place (for markReady and
  // averageAll in later steps too) until another markReadyAt moves it: keep it valid until then,
  // and not overlapping another gradient marked in the same step (checked once any gradient has
  // moved: InvalidArgument naming both, before this one is marked). A device gradient, or any of
  // a ShardedGradientAverager's, stays where it was registered: one that moved raises
  // InvalidArgument naming it and both addresses, before anything is marked or sent (its peers
  // then wait for it until the deadline). So do null data, device memory for a host gradient, and
  // a gradient already marked in this step.
  void markReadyAt(std::size_t index, const void* data, CUstream_st* stream = nullptr);
  // Waits for every bucket; afterwards every gradient holds the result. Raises the first error any
  // bucket hit (and the averager is unusable after a timeout, like its communicator). Every
  // gradient must have been marked ready; the missing ones are named otherwise.
  void synchronize();
  // markReady on every gradient not yet marked, then synchronize().
  void averageAll();

  std::size_t gradientCount() const;
  std::size_t bucketCount() const;
  // Which bucket each gradient belongs to (buckets numbered in launch order).
  std::vector<std::size_t> bucketAssignment() const;
  bool overlapping() const;  // true when buckets start during backward
  GradientAveragerStats stats() const;
  // One entry per bucket, in launch order, for the last completed synchronize().
  std::vector<BucketTiming> lastStepBuckets() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringsync
