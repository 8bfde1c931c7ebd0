#include "resnet50_model.h"

namespace ringsync::bench {

std::vector<Tensor> resnet50() {
  std::vector<Tensor> t;
  auto bn = [&](const std::string& name, std::size_t c) {
    t.push_back({name + ".weight", {c}});
    t.push_back({name + ".bias", {c}});
  };
  t.push_back({"conv1.weight", {64, 3, 7, 7}});
  bn("bn1", 64);
  const std::size_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  std::size_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const std::size_t w = widths[stage];
    for (std::size_t b = 0; b < blocks[stage]; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b);
      t.push_back({p + ".conv1.weight", {w, in, 1, 1}});
      bn(p + ".bn1", w);
      t.push_back({p + ".conv2.weight", {w, w, 3, 3}});
      bn(p + ".bn2", w);
      t.push_back({p + ".conv3.weight", {4 * w, w, 1, 1}});
      bn(p + ".bn3", 4 * w);
      if (b == 0) {
        t.push_back({p + ".downsample.0.weight", {4 * w, in, 1, 1}});
        bn(p + ".downsample.1", 4 * w);
      }
      in = 4 * w;
    }
  }
  t.push_back({"fc.weight", {1000, 2048}});
  t.push_back({"fc.bias", {1000}});
  return t;
}

}  // namespace ringsync::bench
