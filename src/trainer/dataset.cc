#include "dataset.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "ringsync/errors.h"
#include "idx_reader.h"
#include "random.h"
#include "root_task.h"

namespace ringsync::trainer {

namespace {

// Fashion-MNIST's pixel mean and standard deviation (over the training set, in [0, 1]): inputs
// centred near 0 with unit spread let plain SGD use one learning rate for every layer.
constexpr float kPixelMean = 0.2860f;
constexpr float kPixelStd = 0.3530f;

const std::array<float, 256>& normalisedPixel() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> values{};
    for (int p = 0; p < 256; ++p) values[p] = (static_cast<float>(p) / 255.0f - kPixelMean) / kPixelStd;
    return values;
  }();
  return table;
}

Dataset readSplit(const std::string& dir, const std::string& prefix, std::size_t features, std::size_t classes) {
  const std::string imagesPath = dir + "/" + prefix + "-images-idx3-ubyte.gz";
  const std::string labelsPath = dir + "/" + prefix + "-labels-idx1-ubyte.gz";
  IdxArray images = readIdxFile(imagesPath, 3);
  IdxArray labels = readIdxFile(labelsPath, 1);
  const std::size_t imageBytes = images.dims[1] * images.dims[2];
  if (imageBytes != features) {
    throw InvalidArgument(imagesPath + ": images are " + std::to_string(images.dims[1]) + "x" +
                          std::to_string(images.dims[2]) + " = " + std::to_string(imageBytes) +
                          " pixels, but the model's input width is " + std::to_string(features));
  }
  if (images.dims[0] != labels.dims[0]) {
    throw InvalidArgument(labelsPath + ": holds " + std::to_string(labels.dims[0]) + " labels but " + imagesPath +
                          " holds " + std::to_string(images.dims[0]) + " images");
  }
  if (images.dims[0] == 0) throw InvalidArgument(imagesPath + ": holds no images");
  const auto worst = std::max_element(labels.data.begin(), labels.data.end());
  if (*worst >= classes) {
    throw InvalidArgument(labelsPath + ": label " + std::to_string(*worst) + " at index " +
                          std::to_string(worst - labels.data.begin()) + " is not below the model's " +
                          std::to_string(classes) + " classes");
  }
  return Dataset{images.dims[0], features, std::move(images.data), std::move(labels.data)};
}

void broadcastSplit(Communicator& comm, Dataset& set) {
  std::uint64_t shape[2] = {set.count, set.features};
  comm.broadcast(shape, 2, DataType::kUInt64, 0);
  set.count = shape[0];
  set.features = shape[1];
  set.pixels.resize(set.count * set.features);
  set.labels.resize(set.count);
  comm.broadcast(set.pixels.data(), set.pixels.size(), DataType::kUInt8, 0);
  comm.broadcast(set.labels.data(), set.labels.size(), DataType::kUInt8, 0);
}

Dataset makeSyntheticSplit(const std::vector<std::vector<float>>& prototypes, std::size_t count, Rng& rng) {
  const std::size_t classes = prototypes.size();
  const std::size_t features = prototypes.front().size();
  Dataset set{count, features, std::vector<std::uint8_t>(count * features), std::vector<std::uint8_t>(count)};
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t label = static_cast<std::size_t>(rng.below(classes));
    set.labels[i] = static_cast<std::uint8_t>(label);
    for (std::size_t f = 0; f < features; ++f) {
      const double value = prototypes[label][f] + 40.0 * rng.normal();
      set.pixels[i * features + f] = static_cast<std::uint8_t>(std::clamp(std::lround(value), 0L, 255L));
    }
  }
  return set;
}

}  // namespace

TrainTestData loadFashionMnist(Communicator& comm, const std::string& dir, std::size_t features, std::size_t classes) {
  TrainTestData data;
  runOnRoot(comm, [&] {
    data.train = readSplit(dir, "train", features, classes);
    data.test = readSplit(dir, "t10k", features, classes);
  });
  broadcastSplit(comm, data.train);
  broadcastSplit(comm, data.test);
  data.classes = classes;
  data.source = "fashion-mnist (" + dir + ")";
  return data;
}

TrainTestData makeSyntheticData(std::size_t trainCount, std::size_t testCount, std::size_t features,
                                std::size_t classes, std::uint64_t seed) {
  Rng rng(seed, 0x5EED);
  std::vector<std::vector<float>> prototypes(classes, std::vector<float>(features));
  for (auto& prototype : prototypes) {
    for (float& value : prototype) value = static_cast<float>(255.0 * rng.uniform());
  }
  TrainTestData data;
  data.train = makeSyntheticSplit(prototypes, trainCount, rng);
  data.test = makeSyntheticSplit(prototypes, testCount, rng);
  data.classes = classes;
  data.source = "synthetic (" + std::to_string(trainCount) + " train, " + std::to_string(testCount) + " test, seed " +
                std::to_string(seed) + ")";
  return data;
}

void gatherBatch(const Dataset& set, const std::uint32_t* indices, std::size_t rows, float* x, std::int32_t* y) {
  const auto& table = normalisedPixel();
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* pixels = set.pixels.data() + std::size_t{indices[r]} * set.features;
    float* out = x + r * set.features;
    for (std::size_t f = 0; f < set.features; ++f) out[f] = table[pixels[f]];
    y[r] = set.labels[indices[r]];
  }
}

void gatherRange(const Dataset& set, std::size_t first, std::size_t rows, float* x, std::int32_t* y) {
  const auto& table = normalisedPixel();
  const std::uint8_t* pixels = set.pixels.data() + first * set.features;
  for (std::size_t i = 0; i < rows * set.features; ++i) x[i] = table[pixels[i]];
  for (std::size_t r = 0; r < rows; ++r) y[r] = set.labels[first + r];
}

}  // namespace ringsync::trainer
