// ringsync-train's GPU engine (cuBLAS and the trainer's kernels) against the CPU engine: k steps on
// the GPU give the CPU run's parameters within float tolerance (the two sum in different orders),
// with the replicas bit-identical across ranks. At 1 rank the gradients are averaged on the
// device buffers (NCCL); at 2 ranks sharing one GPU through the staged path. Label `gpu`: with no
// device it prints SKIPPED.
#include <catch2/catch.hpp>

#include <vector>

#include "ringsync/ringsync.h"
#include "gpu_test_support.h"
#include "support/test_support.h"
#include "gpu_compute.h"
#include "run_training.h"
#include "trainer.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

namespace {
// cuBLAS and OpenBLAS round differently in every product; over 16 SGD steps with momentum that
// stays well below 1e-4 relative, while a wrong kernel or a missed average is off by far more.
constexpr double kTolerance = 1e-4;
}  // namespace

TEST_CASE("gpu engine: k steps give the cpu engine's parameters, replicas identical", "[trainer][gpu]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  TrainerConfig config = fixtures::smallConfig(13, 16);
  const fixtures::RunOutcome cpu = fixtures::trainOn(comm, config);

  config.device = Device::kGpu;
  const GpuHooks hooks = gpuHooks();
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, &hooks), nullptr);
  const RunReport report = trainer.run();
  const std::vector<float> gpu = trainer.parameters();

  const double difference = fixtures::relativeDifference(gpu, cpu.parameters);
  const bool identical = test::identicalOnAllRanks(gpu.data(), gpu.size() * sizeof(float));
  INFO("n=" << comm.size() << " steps=" << report.lastStep << ": relative difference gpu/cpu " << difference
            << ", replicas identical: " << identical);
  CHECK(report.lastStep == config.maxSteps);
  REQUIRE(test::allRanks(difference <= kTolerance && identical && report.lastStep == config.maxSteps));
}

TEST_CASE("gpu engine --shard: the cpu engine's parameters, replicas identical", "[trainer][gpu][shard]") {
  RINGSYNC_GPU_TEST_OR_SKIP();
  Communicator comm(MPI_COMM_WORLD);
  TrainerConfig config = fixtures::smallConfig(13, 16);
  const fixtures::RunOutcome cpu = fixtures::trainOn(comm, config);

  config.device = Device::kGpu;
  config.shard = true;  // device reduce-scatter and all-gather, momentum for the shard only
  const GpuHooks hooks = gpuHooks();
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, &hooks), nullptr);
  const RunReport report = trainer.run();
  const std::vector<float> gpu = trainer.parameters();

  const double difference = fixtures::relativeDifference(gpu, cpu.parameters);
  const bool identical = test::identicalOnAllRanks(gpu.data(), gpu.size() * sizeof(float));
  INFO("n=" << comm.size() << " steps=" << report.lastStep << ": " << report.sync << "; relative difference gpu/cpu "
            << difference << ", replicas identical: " << identical);
  REQUIRE(
      test::allRanks(difference <= kTolerance && identical && report.sharded && report.lastStep == config.maxSteps));
}
