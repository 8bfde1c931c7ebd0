// The gradient shapes fusion_perf averages: ResNet-50's parameters, as torchvision registers them.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ringsync::bench {

// One parameter tensor: its name and shape; its gradient has count() elements.
struct Tensor {
  std::string name;
  std::vector<std::size_t> shape;
  std::size_t count() const {
    std::size_t c = 1;
    for (std::size_t d : shape) c *= d;
    return c;
  }
};

// torchvision's resnet50 parameters in registration order (model.parameters()):
//   conv1.weight [64,3,7,7], bn1.{weight,bias} [64]
//   layer1..layer4: 3, 4, 6, 3 Bottleneck blocks of width w = 64, 128, 256, 512, each
//     conv1 [w,in,1,1] bn1 [w]x2, conv2 [w,w,3,3] bn2 [w]x2, conv3 [4w,w,1,1] bn3 [4w]x2
//     and in the first block of a stage downsample.0 [4w,in,1,1], downsample.1 [4w]x2
//     (in = 64 for layer1's first block, otherwise the previous block's 4w)
//   fc.weight [1000,2048], fc.bias [1000]
// 161 tensors, 25,557,032 parameters (fusion_perf checks both before it starts).
std::vector<Tensor> resnet50();

}  // namespace ringsync::bench
