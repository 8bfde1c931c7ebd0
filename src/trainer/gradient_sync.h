// How each step's gradients become the global-batch gradient and every rank ends the step with the
// same parameters. Replicated (the default): ringsync's GradientAverager all-reduces the engine's
// flat gradient vector, one GradientBuffer per model tensor, and every rank updates every
// parameter. Sharded (--shard, ZeRO-1/2): ringsync's ShardedGradientAverager reduce-scatters the
// same buckets, each rank updates (and keeps momentum for) its shard only, and the parameters are
// all-gathered bucket by bucket, overlapped with the next forward. Gradients arrive pre-scaled by
// 1/B (B: the global batch), so the ranks' contributions are summed (op kSum), which weights every
// sample equally however unevenly B splits over the ranks.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "ringsync/communicator.h"
#include "compute.h"
#include "model.h"

struct CUstream_st;

namespace ringsync::trainer {

// How the gradients travel: fusion buckets started during backward (`overlap`), float16 on the
// wire (`fp16Wire`; host buffers only), and sharded (`shard`).
struct GradientSyncSettings {
  std::optional<bool> overlap;  // unset: GradientAveragerOptions::overlap's rule
  bool fp16Wire = false;
  bool shard = false;
};

class GradientSync {
 public:
  virtual ~GradientSync() = default;

  // Backward: tensor t's gradient is final (on `stream` for device gradients).
  virtual void markReady(std::size_t tensor, CUstream_st* stream) = 0;
  // Afterwards the gradient holds the sum over the ranks on this rank's ownership().
  virtual void synchronize() = 0;
  // The update of tensor t's owned slice is done (enqueued on `stream`): sharded, its bucket's
  // gather may start. Forward of the next step calls waitForParameter(t) before reading tensor t
  // (device parameters: `stream` waits). gatherParameters() completes every parameter (before
  // anything reads them all: evaluation, checksums, checkpoints). No-ops when replicated.
  virtual void markUpdated(std::size_t /*tensor*/, CUstream_st* /*stream*/) {}
  virtual void waitForParameter(std::size_t /*tensor*/, CUstream_st* /*stream*/) {}
  virtual void gatherParameters() {}

  virtual bool sharded() const = 0;
  // The slices rank `rank` updates (any rank's: the partition is known everywhere).
  virtual Ownership ownership(int rank) const = 0;
  // Bytes this rank sends per step by the ring's count (GradientAveragerStats::wireBytesPerStep).
  virtual std::size_t wireBytesPerStep() const = 0;
  // The run report's line: "GradientAverager (sum of 1/B-scaled gradients, 3 buckets, overlapped)",
  // with ", float16 on the wire" when the last step sent any bucket so (read from the averager, so
  // that the report says what happened, not what was asked).
  virtual std::string describe() const = 0;
};

// Collective over `comm`. `gradients` and `parameters` are the engine's flat vectors (host or
// device memory) in `layout`'s order.
std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               float* parameters, const GradientSyncSettings& settings);

}  // namespace ringsync::trainer
