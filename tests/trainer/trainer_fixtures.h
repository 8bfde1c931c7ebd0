// Helpers for the trainer's tests: small synthetic configurations, a training run to its final
// parameters, a scratch folder shared by all ranks, and IDX files written with zlib.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringsync/communicator.h"
#include "config.h"
#include "metrics.h"

namespace ringsync::trainer::fixtures {

// A 20-16-12-5 MLP on 90 synthetic samples (30 test), quiet, CPU, no per-epoch evaluation.
TrainerConfig smallConfig(std::size_t globalBatch, std::size_t maxSteps);

struct RunOutcome {
  std::vector<float> parameters;
  std::vector<float> momentum;
  RunReport report;
};
// Collective over `comm`: loads the config's data, trains on the CPU engine, returns the state.
RunOutcome trainOn(Communicator& comm, const TrainerConfig& config);

// ||a - b||_2 / ||b||_2 (computed in double).
double relativeDifference(const std::vector<float>& a, const std::vector<float>& b);

// Collective over MPI_COMM_WORLD: a fresh folder made by rank 0 (its path is broadcast); removed
// with its files by the destructor (rank 0).
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// An IDX file of unsigned bytes: the 4-byte magic {0, 0, type, rank}, then the dims, then data.
// `gzip` writes it compressed (as Debian ships Fashion-MNIST), else plain.
void writeIdx(const std::string& path, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data,
              bool gzip = true, std::uint8_t type = 0x08);
// Raw bytes into a file (to write corrupt ones).
void writeBytes(const std::string& path, const std::vector<std::uint8_t>& bytes);
std::vector<std::uint8_t> readBytes(const std::string& path);

}  // namespace ringsync::trainer::fixtures
