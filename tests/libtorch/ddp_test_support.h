// Helpers of the DistributedDataParallel tests: a module made of bare parameters, and the closed
// form its gradients follow (rank r, step s, element i: r + 1 + s + i % 7).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace ringsync::testing {

struct ParameterSpec {
  ::torch::Dtype dtype;
  int64_t count;
};

class ParameterModule : public ::torch::nn::Module {
 public:
  explicit ParameterModule(const std::vector<ParameterSpec>& specs) {
    for (std::size_t p = 0; p < specs.size(); ++p)
      register_parameter(name(p), ::torch::zeros({specs[p].count}, specs[p].dtype));
  }
  ::torch::Tensor parameter(std::size_t p) { return named_parameters()[name(p)]; }

 private:
  static std::string name(std::size_t p) {
    std::string text = "p";  // appended piecewise: GCC 12 warns (-Wrestrict, a false positive) on "p" + string
    text += std::to_string(p);
    return text;
  }
};

// Rank `rank`'s gradient at `step`: element i of every parameter gets rank + 1 + step + i % 7.
inline ::torch::Tensor closedForm(int64_t count, double rank, double step) {
  return rank + 1 + step + ::torch::arange(count, ::torch::kDouble) % 7;
}

inline void backwardClosedForm(ParameterModule& module, int rank, int step) {
  ::torch::Tensor loss = ::torch::zeros({}, ::torch::kDouble);
  for (const ::torch::Tensor& p : module.parameters())
    loss = loss + (p.to(::torch::kDouble) * closedForm(p.numel(), rank, step).to(p.device())).sum();
  loss.backward();
}

// Every .grad holds the average over `ranks` ranks: (ranks + 1) / 2 + step + i % 7, exactly.
inline bool gradientsAreAverages(ParameterModule& module, int ranks, int step) {
  for (const ::torch::Tensor& p : module.parameters()) {
    if (!p.grad().defined() || p.grad().scalar_type() != p.scalar_type()) return false;
    const ::torch::Tensor expected = closedForm(p.numel(), (ranks - 1) / 2.0, step);
    if (!::torch::equal(p.grad().to(::torch::kDouble).cpu(), expected)) return false;
  }
  return true;
}

}  // namespace ringsync::testing
