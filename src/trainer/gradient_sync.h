// How each step's gradients become the global-batch gradient on every rank: ringsync's
// GradientAverager over the engine's flat gradient vector, one GradientBuffer per model tensor.
// Gradients arrive pre-scaled by 1/B (B: the global batch), so the ranks' contributions are
// summed (op kSum), which weights every sample equally however unevenly B splits over the ranks.
#pragma once

#include <memory>
#include <string>

#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"
#include "model.h"

namespace ringsync::trainer {

// How the gradients travel: fusion buckets started during backward (`overlap`), and float16 on the
// wire (`fp16Wire`; the averager sends host buffers only that way).
struct GradientSyncSettings {
  bool overlap = true;
  bool fp16Wire = false;
};

// Collective over `comm`. `gradients` is the engine's flat gradient vector (host or device memory)
// in `layout`'s order.
std::unique_ptr<GradientAverager> makeGradientAverager(const Communicator& comm, const ModelLayout& layout,
                                                       float* gradients, const GradientSyncSettings& settings);

// The run report's line: "GradientAverager (sum of 1/B-scaled gradients, 3 buckets, overlapped)",
// with ", float16 on the wire" when the last step sent any bucket so (read from the averager, so
// that the report says what happened, not what was asked).
std::string describeGradientSync(const GradientAverager& averager);

}  // namespace ringsync::trainer
