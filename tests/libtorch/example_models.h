// The libtorch example trainer's models: an MLP and a small CNN for 28x28 images, 10 classes.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace ringsync_example {

struct MlpImpl : ::torch::nn::Module {
  explicit MlpImpl(const std::vector<int64_t>& hidden) {
    int64_t width = 28 * 28;
    for (std::size_t i = 0; i < hidden.size(); ++i) {
      layers.push_back(register_module("fc" + std::to_string(i + 1), ::torch::nn::Linear(width, hidden[i])));
      width = hidden[i];
    }
    layers.push_back(register_module("out", ::torch::nn::Linear(width, 10)));
  }
  ::torch::Tensor forward(::torch::Tensor x) {
    x = x.view({x.size(0), -1});
    for (std::size_t i = 0; i + 1 < layers.size(); ++i) x = ::torch::relu(layers[i]->forward(x));
    return layers.back()->forward(x);
  }
  std::vector<::torch::nn::Linear> layers;
};
TORCH_MODULE(Mlp);

struct CnnImpl : ::torch::nn::Module {
  CnnImpl()
      : conv1(register_module("conv1", ::torch::nn::Conv2d(::torch::nn::Conv2dOptions(1, 8, 5)))),
        conv2(register_module("conv2", ::torch::nn::Conv2d(::torch::nn::Conv2dOptions(8, 16, 5)))),
        fc1(register_module("fc1", ::torch::nn::Linear(16 * 4 * 4, 64))),
        out(register_module("out", ::torch::nn::Linear(64, 10))) {}
  ::torch::Tensor forward(::torch::Tensor x) {
    x = ::torch::max_pool2d(::torch::relu(conv1->forward(x)), 2);  // 8 x 12 x 12
    x = ::torch::max_pool2d(::torch::relu(conv2->forward(x)), 2);  // 16 x 4 x 4
    x = ::torch::relu(fc1->forward(x.flatten(1)));
    return out->forward(x);
  }
  ::torch::nn::Conv2d conv1, conv2;
  ::torch::nn::Linear fc1, out;
};
TORCH_MODULE(Cnn);

}  // namespace ringsync_example
