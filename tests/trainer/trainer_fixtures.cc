#include "trainer_fixtures.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <zlib.h>

#include "compute.h"
#include "run_training.h"
#include "trainer.h"

namespace ringsync::trainer::fixtures {

TrainerConfig smallConfig(std::size_t globalBatch, std::size_t maxSteps) {
  TrainerConfig config;
  config.layers = {20, 16, 12, 5};
  config.syntheticSamples = 90;
  config.syntheticTestSamples = 30;
  config.globalBatch = globalBatch;
  config.maxSteps = maxSteps;
  config.epochs = 10;
  config.sgd.learningRate = 0.1f;
  config.printEvery = 0;
  config.replicaCheckEvery = 4;
  config.evaluateEachEpoch = false;
  config.quiet = true;
  config.device = Device::kCpu;
  return config;
}

RunOutcome trainOn(Communicator& comm, const TrainerConfig& config) {
  const TrainTestData data = loadData(comm, config);
  Trainer trainer(comm, config, data, makeEngineOnEveryRank(comm, config, nullptr), nullptr);
  RunOutcome outcome;
  outcome.report = trainer.run();
  outcome.parameters = trainer.parameters();
  outcome.momentum = trainer.momentum();
  return outcome;
}

double relativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double difference = 0, norm = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    difference += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    norm += double{b[i]} * b[i];
  }
  return std::sqrt(difference) / std::sqrt(norm);
}

ScratchDir::ScratchDir(const std::string& tag) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char name[4096] = {};
  if (rank == 0) {
    const std::string pattern = (std::filesystem::temp_directory_path() / ("ringsync-" + tag + "-XXXXXX")).string();
    std::snprintf(name, sizeof(name), "%s", pattern.c_str());
    if (!mkdtemp(name)) throw std::runtime_error("mkdtemp failed for " + pattern);
  }
  MPI_Bcast(name, sizeof(name), MPI_CHAR, 0, MPI_COMM_WORLD);
  path_ = name;
}

ScratchDir::~ScratchDir() {
  MPI_Barrier(MPI_COMM_WORLD);  // nobody still reads the files
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::error_code ignored;
  if (rank == 0) std::filesystem::remove_all(path_, ignored);
}

void writeIdx(const std::string& path, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data,
              bool gzip, std::uint8_t type) {
  std::vector<std::uint8_t> bytes = {0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t dim : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(dim >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  if (!gzip) return writeBytes(path, bytes);
  gzFile file = gzopen(path.c_str(), "wb");
  if (!file) throw std::runtime_error("gzopen failed for " + path);
  const int written = gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(file);
  if (written != static_cast<int>(bytes.size())) throw std::runtime_error("gzwrite failed for " + path);
}

void writeBytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream file(path, std::ios::binary);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!file) throw std::runtime_error("cannot write " + path);
}

std::vector<std::uint8_t> readBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
}

}  // namespace ringsync::trainer::fixtures
