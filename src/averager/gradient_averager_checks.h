// GradientAverager's checks: the local ones at construction (InvalidArgument, nothing sent) and
// the cross-rank one at the first call (MismatchError on every rank, naming the difference).
#pragma once

#include <cstddef>
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
};

// Options with the communicator's defaults filled in; InvalidArgument for an unsupported op.
AveragerSettings resolveSettings(const GradientAveragerOptions& options, const Options& commOptions);

// Validates each gradient (type, count, null data, overlaps between gradients) and classifies its
// memory. InvalidArgument naming the gradient otherwise.
std::vector<GradientSpec> checkGradients(const std::vector<GradientBuffer>& gradients);

// Collective over `comm`: every rank registered the same list (count, type, memory per gradient)
// with the same settings; otherwise MismatchError, the same message on every rank.
void checkSameGradientsOnAllRanks(Communicator& comm, const std::vector<GradientSpec>& gradients,
                                  const AveragerSettings& settings);

}  // namespace ringsync::detail
