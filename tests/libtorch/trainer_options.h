// libtorch_ddp_trainer's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fashion_mnist.h"
#include "trainer_replica.h"

namespace ringsync_example {

struct TrainerOptions {
  std::string dataDir = kFashionMnistDir;
  ModelSpec model;
  int64_t batch = 96;  // global: every rank takes batch / ranks rows
  std::uint64_t seed = 7;
  int threads = 1;  // torch's intra-op threads per rank (ranks share the cores)
  // --check (the default): train --steps steps with --sync and compare with one process.
  int64_t steps = 12;
  Sync sync = Sync::kDdp;
  // --compare: time the --modes in --rounds interleaved rounds of --steps-per-round steps.
  bool compareMode = false;
  std::vector<Sync> compare = {Sync::kDdp, Sync::kCommunicator, Sync::kMpi};
  int rounds = 5;
  int64_t stepsPerRound = 10;
};

// std::invalid_argument naming the option on a bad command line; --help prints the usage and exits.
TrainerOptions parseTrainerOptions(int argc, char** argv);

}  // namespace ringsync_example
