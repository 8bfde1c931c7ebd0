// Which samples a step uses and at which learning rate. Every epoch visits the training set in
// one shuffled order (epochOrder: the same on every rank), cut into global batches of B samples
// (the last one may be shorter); each global batch is split into contiguous shares, one per rank.
// Nothing here communicates: every rank derives the same plan from the same numbers.
#pragma once

#include <cstddef>

#include "config.h"

namespace ringsync::trainer {

struct Share {
  std::size_t begin = 0;  // position of the rank's first sample within the batch
  std::size_t count = 0;  // samples the rank computes (0 when the batch has fewer rows than ranks)
};

// Rank r of n gets floor(rows/n) samples, plus one for the first rows % n ranks.
Share shareOf(std::size_t rows, int rank, int ranks);

std::size_t batchesPerEpoch(std::size_t samples, std::size_t globalBatch);

// Rows of batch `batch` of an epoch of `samples` samples (B, or the remainder for the last one).
std::size_t batchRows(std::size_t samples, std::size_t globalBatch, std::size_t batch);

// The learning rate of step `step` (0-based) of a run of `totalSteps` steps: a linear warm-up over
// sgd.warmupSteps, then constant or a cosine decay to 0 at totalSteps.
float learningRateAt(const SgdSettings& sgd, std::size_t step, std::size_t totalSteps);

}  // namespace ringsync::trainer
