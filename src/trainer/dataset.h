// The labelled samples the trainer learns from: Fashion-MNIST (read by rank 0 with zlib and
// broadcast, so other nodes need no copy of the files) or a synthetic set for tests and benches.
// Pixels stay bytes in memory (47 MB for Fashion-MNIST's training set, per rank) and are turned
// into normalised floats only for the rows of a batch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ringsync/communicator.h"

namespace ringsync::trainer {

struct Dataset {
  std::size_t count = 0;             // samples
  std::size_t features = 0;          // bytes per sample
  std::vector<std::uint8_t> pixels;  // count x features, row-major
  std::vector<std::uint8_t> labels;  // count, each < classes
};

struct TrainTestData {
  Dataset train;
  Dataset test;
  std::size_t classes = 0;
  std::string source;  // "fashion-mnist (DIR)" or "synthetic (...)"
};

// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz from `dir`. Collective: rank 0 reads and checks
// the files, then broadcasts them. A missing or malformed file, or data that does not fit a model
// of `features` inputs and `classes` outputs, raises CollectiveFailure on every rank naming the
// file and the problem.
TrainTestData loadFashionMnist(Communicator& comm, const std::string& dir, std::size_t features, std::size_t classes);

// A learnable synthetic set: each class has a random prototype image and a sample is its class's
// prototype plus noise. Deterministic in `seed`; every rank builds the same one without talking.
TrainTestData makeSyntheticData(std::size_t trainCount, std::size_t testCount, std::size_t features,
                                std::size_t classes, std::uint64_t seed);

// Normalised rows `indices[0..rows)` of `set` into x (rows x features floats) and their labels into y.
void gatherBatch(const Dataset& set, const std::uint32_t* indices, std::size_t rows, float* x, std::int32_t* y);
// The same for the contiguous rows [first, first + rows).
void gatherRange(const Dataset& set, std::size_t first, std::size_t rows, float* x, std::int32_t* y);

}  // namespace ringsync::trainer
