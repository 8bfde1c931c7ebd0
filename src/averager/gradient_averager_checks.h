// GradientAverager's and ShardedGradientAverager's checks: the local ones at construction
// (InvalidArgument, nothing sent) and the cross-rank one (MismatchError on every rank, naming the
// difference): at the first call for a GradientAverager, at construction for a sharded one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "bucket_plan.h"
#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"

namespace ringsync::detail {

// What every rank must agree on besides the gradient list: it decides the buckets and the calls.
struct AveragerSettings {
  std::size_t bucketBytes;
  std::size_t firstBucketBytes;
  ReduceOp op;
  bool compressFp16;
  bool sharded;  // reduce-scatter + all-gather (ShardedGradientAverager) instead of all-reduce
  const char* who() const { return sharded ? "ShardedGradientAverager" : "GradientAverager"; }
};

// Options with the communicator's defaults filled in; InvalidArgument for an unsupported op.
AveragerSettings resolveSettings(const GradientAveragerOptions& options, const Options& commOptions, bool sharded);

// Validates each gradient (type, count, null data, overlaps between gradients) and classifies its
// memory. InvalidArgument naming the gradient otherwise (`who` starts the message).
std::vector<GradientSpec> checkGradients(const std::vector<GradientBuffer>& gradients, const char* who);

// A sharded averager's parameters: one per gradient with its count, type and memory kind, none
// overlapping another parameter or any gradient. InvalidArgument naming the parameter otherwise.
std::vector<GradientSpec> checkParameters(const std::vector<GradientBuffer>& parameters,
                                          const std::vector<GradientSpec>& gradients, const char* who);

// GradientAveragerOptions::groups (when given): every gradient in exactly one non-empty group, one
// element type and one kind of memory per group. InvalidArgument naming the group otherwise.
void checkGroups(const std::vector<std::vector<std::size_t>>& groups, const std::vector<GradientSpec>& gradients,
                 const char* who);

// The buckets' membership as one word, for the cross-rank check.
std::uint64_t hashBuckets(const std::vector<Bucket>& buckets);

// Collective over `comm`: every rank registered the same list (count, type, memory per gradient)
// with the same settings, fused it into the same buckets (`bucketsHash`: hashBuckets) and computed
// the same partition (`partitionHash`: ShardPlan::hash(), 0 for a replicated averager); otherwise
// MismatchError, the same message on every rank.
void checkSameGradientsOnAllRanks(Communicator& comm, const std::vector<GradientSpec>& gradients,
                                  const AveragerSettings& settings, std::uint64_t bucketsHash,
                                  std::uint64_t partitionHash);

}  // namespace ringsync::detail
