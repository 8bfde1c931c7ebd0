#include "run_training.h"

#include <fstream>
#include <ostream>

#include "errors.h"
#include "root_task.h"
#include "schedule.h"
#include "trainer.h"

namespace ringsync::trainer {

namespace {
constexpr std::size_t kMinEngineRows = 256;  // evaluation slices; more rows cost only memory
}

TrainTestData loadData(Communicator& comm, const TrainerConfig& config) {
  const std::size_t features = config.layers.front(), classes = config.layers.back();
  if (config.syntheticSamples == 0) return loadFashionMnist(comm, config.dataDir, features, classes);
  const std::size_t test = config.syntheticTestSamples > 0 ? config.syntheticTestSamples
                                                           : std::max<std::size_t>(1, config.syntheticSamples / 5);
  return makeSyntheticData(config.syntheticSamples, test, features, classes, config.seed);
}

std::unique_ptr<ComputeEngine> makeEngineOnEveryRank(Communicator& comm, const TrainerConfig& config,
                                                     const GpuHooks* gpu) {
  const ModelLayout layout(config.layers);
  const std::size_t share = shareOf(config.effectiveGlobalBatch(comm.size()), 0, comm.size()).count;
  std::unique_ptr<ComputeEngine> engine;
  ErrorCode code = ErrorCode::kInternal;
  std::string reason;
  try {
    // The GPU the library uses for this rank's device collectives, so the averager never sees
    // gradients on another device than NCCL's (-1: no GPU for this rank).
    engine = makeComputeEngine(config.device, layout, std::max(share, kMinEngineRows), config.blasThreads,
                               comm.cudaDevice(), gpu);
  } catch (const Error& error) {
    code = error.code();
    reason = error.what();
  } catch (const std::exception& error) {
    reason = error.what();
  }
  shareFailure(comm, engine == nullptr, code, reason);
  return engine;
}

RunReport runTraining(Communicator& comm, const TrainerConfig& config, const GpuHooks* gpu, std::ostream* out) {
  config.validate();
  std::ostream* rankZeroOut = comm.rank() == 0 && !config.quiet ? out : nullptr;
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, gpu), rankZeroOut);
  const RunReport report = trainer.run();
  if (rankZeroOut) *rankZeroOut << formatSummary(report) << std::endl;
  if (!config.jsonPath.empty()) {
    runOnRoot(comm, [&] {
      std::ofstream file(config.jsonPath);
      file << reportJson(report);
      file.close();
      if (!file) throw InvalidArgument("--json: cannot write " + config.jsonPath);
    });
  }
  return report;
}

}  // namespace ringsync::trainer
