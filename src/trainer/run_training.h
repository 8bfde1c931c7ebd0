// One whole ringsync-train run, as main() does it: load the data, pick the compute engine on every
// rank, train, print the summary and write the --json file (rank 0).
#pragma once

#include <iosfwd>

#include "ringsync/communicator.h"
#include "compute.h"
#include "config.h"
#include "dataset.h"
#include "metrics.h"

namespace ringsync::trainer {

// Collective. Fashion-MNIST, or the synthetic set when config.syntheticSamples > 0.
TrainTestData loadData(Communicator& comm, const TrainerConfig& config);

// Collective: makes each rank's engine and agrees on the outcome, so that a rank that cannot make
// its engine (no GPU for --device gpu) fails every rank with its reason instead of hanging them.
std::unique_ptr<ComputeEngine> makeEngineOnEveryRank(Communicator& comm, const TrainerConfig& config,
                                                     const GpuHooks* gpu);

// Collective: everything above, then Trainer::run; rank 0 prints to `out` (may be null).
RunReport runTraining(Communicator& comm, const TrainerConfig& config, const GpuHooks* gpu, std::ostream* out);

}  // namespace ringsync::trainer
