#include "fashion_mnist.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include <zlib.h>

namespace ringsync_example {
namespace {

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

void readExactly(gzFile_s* file, const std::string& path, std::uint8_t* out, std::size_t bytes) {
  std::size_t done = 0;
  while (done < bytes) {
    const int got = gzread(file, out + done, static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1u << 20)));
    if (got <= 0) throw std::runtime_error(path + ": ends early or is not a valid gzip stream");
    done += static_cast<std::size_t>(got);
  }
}

// Opens an IDX file of unsigned bytes with `rank` dimensions and returns the dimensions.
std::vector<std::size_t> openIdx(GzFile& file, const std::string& path, std::size_t rank) {
  file.reset(gzopen(path.c_str(), "rb"));
  if (!file) throw std::runtime_error(path + ": cannot open (install Debian's dataset-fashion-mnist, or pass --data)");
  std::uint8_t magic[4];
  readExactly(file.get(), path, magic, 4);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] != rank)
    throw std::runtime_error(path + ": not an IDX file of unsigned bytes with " + std::to_string(rank) + " dimensions");
  std::vector<std::size_t> dims(rank);
  for (std::size_t& d : dims) {
    std::uint8_t b[4];
    readExactly(file.get(), path, b, 4);
    d = (std::size_t{b[0]} << 24) | (std::size_t{b[1]} << 16) | (std::size_t{b[2]} << 8) | b[3];
  }
  return dims;
}

}  // namespace

Images readTrainingImages(const std::string& dir, std::size_t count) {
  const std::string imagesPath = dir + "/train-images-idx3-ubyte.gz";
  const std::string labelsPath = dir + "/train-labels-idx1-ubyte.gz";
  GzFile imagesFile, labelsFile;
  const std::vector<std::size_t> imageDims = openIdx(imagesFile, imagesPath, 3);
  const std::vector<std::size_t> labelDims = openIdx(labelsFile, labelsPath, 1);
  if (imageDims[0] < count || labelDims[0] < count)
    throw std::runtime_error(dir + ": holds " + std::to_string(imageDims[0]) + " images, " + std::to_string(count) +
                             " are needed");
  Images images{count, imageDims[1], imageDims[2], std::vector<std::uint8_t>(count * imageDims[1] * imageDims[2]),
                std::vector<std::uint8_t>(count)};
  readExactly(imagesFile.get(), imagesPath, images.pixels.data(), images.pixels.size());
  readExactly(labelsFile.get(), labelsPath, images.labels.data(), images.labels.size());
  for (std::uint8_t label : images.labels)
    if (label > 9) throw std::runtime_error(labelsPath + ": label " + std::to_string(label) + " is not 0-9");
  return images;
}

}  // namespace ringsync_example
