// How each step's gradients become the global-batch gradient on every rank. The trainer's step
// only sees this interface: markReady(t) as backward finishes tensor t, then synchronize().
// Gradients arrive pre-scaled by 1/B (B: the global batch), so the ranks' contributions are
// summed (op kSum), which weights every sample equally however unevenly B splits over the ranks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ringsync/communicator.h"
#include "model.h"

struct CUstream_st;

namespace ringsync::trainer {

class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void markReady(std::size_t tensor) = 0;
  // Returns once every gradient holds the sum over the ranks.
  virtual void synchronize() = 0;
  virtual std::string describe() const = 0;
};

// `gradients` is the engine's flat gradient vector (host or device memory) in `layout`'s order;
// for device memory, `stream` is where the engine produces them. With ringsync's GradientAverager:
// fusion buckets, started during backward when `overlap`.
std::unique_ptr<GradientSync> makeGradientSync(const Communicator& comm, const ModelLayout& layout, float* gradients,
                                               bool overlap, CUstream_st* stream);

}  // namespace ringsync::trainer
