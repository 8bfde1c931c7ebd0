// The first images of Fashion-MNIST's training set (Debian's dataset-fashion-mnist), for the
// libtorch example trainer. No torch here: pixels and labels as bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringsync_example {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct Images {
  std::size_t count = 0;
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::vector<std::uint8_t> pixels;  // count * rows * columns, row-major
  std::vector<std::uint8_t> labels;  // count, 0-9
};

// Reads the first `count` training images and labels from `dir`'s gzip IDX files;
// std::runtime_error naming the file when one is missing, short or malformed.
Images readTrainingImages(const std::string& dir, std::size_t count);

}  // namespace ringsync_example
