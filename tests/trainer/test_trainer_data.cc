// Fashion-MNIST loading: rank 0 reads the four IDX files and broadcasts them; every malformed or
// missing file is rejected on every rank with an error naming the file and the problem. Small
// hand-made files (28x28 images whose pixels follow a closed form) stand in for the real set,
// which is checked too when Debian's dataset-fashion-mnist is installed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>

#include "ringsync/ringsync.h"
#include "support/test_support.h"
#include "dataset.h"
#include "errors.h"
#include "trainer_fixtures.h"

using namespace ringsync;
using namespace ringsync::trainer;

namespace {

constexpr std::uint32_t kSide = 28;
constexpr std::size_t kFeatures = kSide * kSide;
constexpr std::size_t kClasses = 10;

std::uint8_t pixel(std::size_t image, std::size_t i) { return static_cast<std::uint8_t>((image * 7 + i) % 251); }
std::uint8_t label(std::size_t image) { return static_cast<std::uint8_t>((image * 3) % kClasses); }

// A valid miniature Fashion-MNIST in `dir`: `train` training and `test` test images.
void writeValidSet(const std::string& dir, std::uint32_t train, std::uint32_t test) {
  for (const auto& [prefix, count] : {std::pair<std::string, std::uint32_t>{"train", train}, {"t10k", test}}) {
    std::vector<std::uint8_t> images(count * kFeatures), labels(count);
    for (std::size_t n = 0; n < count; ++n) {
      for (std::size_t i = 0; i < kFeatures; ++i) images[n * kFeatures + i] = pixel(n, i);
      labels[n] = label(n);
    }
    fixtures::writeIdx(dir + "/" + prefix + "-images-idx3-ubyte.gz", {count, kSide, kSide}, images);
    fixtures::writeIdx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", {count}, labels);
  }
}

// Loads `dir` on every rank; returns the CollectiveFailure message ("" on success).
std::string loadError(Communicator& comm, const std::string& dir) {
  try {
    loadFashionMnist(comm, dir, kFeatures, kClasses);
  } catch (const CollectiveFailure& failure) {
    return failure.what();
  }
  return "";
}

// Rank 0 rewrites the valid set, then applies `corrupt` (rank 0 alone reads the files).
void prepare(Communicator& comm, const std::string& dir, const std::function<void()>& corrupt) {
  if (comm.rank() == 0) {
    writeValidSet(dir, 6, 4);
    corrupt();
  }
}

}  // namespace

TEST_CASE("data: a valid set reaches every rank intact", "[trainer][data]") {
  Communicator comm(MPI_COMM_WORLD);
  fixtures::ScratchDir dir("trainer-data");
  prepare(comm, dir.path(), [] {});
  const TrainTestData data = loadFashionMnist(comm, dir.path(), kFeatures, kClasses);
  bool ok = data.train.count == 6 && data.test.count == 4 && data.train.features == kFeatures && data.classes == 10;
  for (std::size_t n = 0; ok && n < data.train.count; ++n) {
    ok = data.train.labels[n] == label(n);
    for (std::size_t i = 0; i < kFeatures; ++i) ok = ok && data.train.pixels[n * kFeatures + i] == pixel(n, i);
  }
  for (std::size_t n = 0; ok && n < data.test.count; ++n) ok = data.test.labels[n] == label(n);
  REQUIRE(ringsync::test::allRanks(ok));
}

TEST_CASE("data: missing and malformed files are rejected on every rank, naming the file", "[trainer][data]") {
  Communicator comm(MPI_COMM_WORLD);
  fixtures::ScratchDir dir("trainer-data");
  const std::string trainImages = dir.file("train-images-idx3-ubyte.gz");
  const std::string trainLabels = dir.file("train-labels-idx1-ubyte.gz");
  const std::string testImages = dir.file("t10k-images-idx3-ubyte.gz");
  const std::string testLabels = dir.file("t10k-labels-idx1-ubyte.gz");
  std::vector<std::uint8_t> sixImages(6 * kFeatures, 1), sixLabels(6, 1);
  struct Case {
    std::string what;
    std::function<void()> corrupt;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"missing file", [&] { std::filesystem::remove(testLabels); },
       testLabels + ": cannot open (No such file or directory)"},
      {"labels in the images file", [&] { fixtures::writeIdx(trainImages, {6}, sixLabels); },
       trainImages + ": IDX file has 1 dimensions, expected 3"},
      {"not an IDX file",
       [&] {
         fixtures::writeBytes(trainLabels, {'h', 'e', 'l', 'l', 'o', '!'});
       },
       trainLabels + ": bad magic 0x68656c6c (not an IDX file)"},
      {"float elements",
       [&] {
         fixtures::writeIdx(trainImages, {6, kSide, kSide}, sixImages, true, 0x0D);
       },
       trainImages + ": IDX element type 0xd, expected 0x8 (unsigned byte)"},
      {"truncated data",
       [&] {
         fixtures::writeIdx(testImages, {4, kSide, kSide}, std::vector<std::uint8_t>(100));
       },
       testImages + ": truncated: the header promises 3136 data bytes, the file holds 100"},
      {"trailing bytes", [&] { fixtures::writeIdx(trainLabels, {6}, std::vector<std::uint8_t>(7, 1)); },
       trainLabels + ": unexpected bytes after the 6 data bytes"},
      {"count mismatch", [&] { fixtures::writeIdx(trainLabels, {5}, std::vector<std::uint8_t>(5, 1)); },
       trainLabels + ": holds 5 labels but " + trainImages + " holds 6 images"},
      {"label out of range",
       [&] {
         fixtures::writeIdx(testLabels, {4}, {1, 2, 10, 3});
       },
       testLabels + ": label 10 at index 2 is not below the model's 10 classes"},
      {"wrong image size",
       [&] {
         fixtures::writeIdx(trainImages, {6, 27, 28}, std::vector<std::uint8_t>(6 * 27 * 28));
       },
       trainImages + ": images are 27x28 = 756 pixels, but the model's input width is 784"},
      {"corrupt gzip stream",
       [&] {
         std::vector<std::uint8_t> bytes = fixtures::readBytes(trainImages);
         for (std::size_t i = 20; i < bytes.size() - 8; i += 3) bytes[i] ^= 0x5A;
         fixtures::writeBytes(trainImages, bytes);
       },
       trainImages + ": corrupt or unreadable gzip stream"},
      {"empty file", [&] { fixtures::writeBytes(testImages, {}); }, testImages + ": too short for an IDX header"},
  };
  for (const Case& c : cases) {
    prepare(comm, dir.path(), c.corrupt);
    const std::string message = loadError(comm, dir.path());
    INFO(c.what << ": got '" << message << "', expected it to contain '" << c.expected << "'");
    REQUIRE(ringsync::test::allRanks(message.find(c.expected) != std::string::npos));
  }
  // Gzip is optional: plain IDX files load too (zlib reads them transparently).
  prepare(comm, dir.path(), [&] { fixtures::writeIdx(testLabels, {4}, {1, 2, 3, 4}, false); });
  REQUIRE(ringsync::test::allRanks(loadError(comm, dir.path()).empty()));
}

TEST_CASE("data: Debian's Fashion-MNIST has 60000 + 10000 balanced samples", "[trainer][data]") {
  const std::string dir = TrainerConfig{}.dataDir;
  if (!std::filesystem::exists(dir + "/train-images-idx3-ubyte.gz")) {
    WARN("SKIPPED: " << dir << " not installed (apt-get install dataset-fashion-mnist)");
    return;
  }
  Communicator comm(MPI_COMM_WORLD);
  const TrainTestData data = loadFashionMnist(comm, dir, kFeatures, kClasses);
  std::vector<std::size_t> trainPerClass(kClasses), testPerClass(kClasses);
  for (std::uint8_t l : data.train.labels) ++trainPerClass[l];
  for (std::uint8_t l : data.test.labels) ++testPerClass[l];
  bool balanced = true;
  for (std::size_t c = 0; c < kClasses; ++c) balanced = balanced && trainPerClass[c] == 6000 && testPerClass[c] == 1000;
  REQUIRE(ringsync::test::allRanks(
      data.train.count == 60000 && data.test.count == 10000 && balanced &&
      ringsync::test::identicalOnAllRanks(data.train.pixels.data(), data.train.pixels.size())));
}
