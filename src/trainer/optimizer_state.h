// The momentum in two layouts: the engine's (its Ownership's slices back to back: the whole model
// when replicated, this rank's shard with --shard) and the checkpoint's (every parameter's, in
// ModelLayout's order). A sharded checkpoint gathers the momentum into the full layout, so a
// checkpoint is the same file in both modes and resumes in either, at any rank count.
#pragma once

#include <vector>

#include "ringsync/communicator.h"
#include "compute.h"
#include "gradient_sync.h"
#include "model.h"

namespace ringsync::trainer {

// The full momentum from every rank's owned slices (collective over `comm` when sharded: one
// all-gather of the ranks' slices, padded to the largest; every element has exactly one owner).
std::vector<float> gatherMomentum(Communicator& comm, const GradientSync& sync, const ModelLayout& layout,
                                  const std::vector<float>& owned);

// `owned`'s slices of a full momentum, back to back (the engine's layout).
std::vector<float> ownedMomentum(const Ownership& owned, const ModelLayout& layout, const std::vector<float>& full);

}  // namespace ringsync::trainer
