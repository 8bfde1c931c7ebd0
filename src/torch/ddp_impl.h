// The state behind a DistributedDataParallel: the buckets it owns, one slot per parameter, the
// hooks registered on autograd and the GradientAverager that all-reduces the buckets.
//
// The averager is handed one gradient per bucket (the bucket's whole tensor) with bucketBytes=1,
// so each bucket is all-reduced in place as one call, and it never sees a pointer that can
// change: the bucket tensors live as long as the averager (and longer, through the .grad views).
//
// Threads: the hook runs on autograd's thread for the parameter's device (the caller's thread for
// CPU tensors); synchronize() on the caller's after backward has returned, so the two never run
// at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include "model_state.h"
#include "ringsync/communicator.h"
#include "ringsync/gradient_averager.h"
#include "ringsync/torch.h"

namespace ringsync::torch {

struct DistributedDataParallel::Impl {
  Impl(const Communicator& comm, ::torch::nn::Module& module, const DistributedDataParallelOptions& options);
  ~Impl();  // removes the hooks first; never throws

  // The hooks on parameter `index`'s gradient accumulator: before it runs (refuses a second
  // gradient in one step while its bucket may be in flight) and after it has written .grad.
  void beforeGradientAccumulated(std::size_t index);
  void onGradientAccumulated(std::size_t index);
  void synchronize();
  void broadcastBuffers();

  struct Parameter {
    std::string name;
    at::Tensor tensor;
    std::size_t bucket = 0;
    // Its gradient's place in the bucket, shaped like the parameter. Made with set_() on the
    // bucket's storage, not as an autograd view: libtorch's zero_grad() calls detach_() on every
    // .grad, which autograd refuses on a view ("Can't detach views in-place").
    at::Tensor view;
    c10::intrusive_ptr<::torch::autograd::Node> accumulator;  // kept alive: its hooks are ours
    ::torch::autograd::FunctionPreHook* preHook = nullptr;    // owned by the accumulator
    std::uintptr_t postHookKey = 0;
    bool accumulated = false;  // this step
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<std::size_t> members;
    std::size_t pending = 0;  // members not yet accumulated this step
  };

  // Makes the parameter's .grad its bucket view, copying a gradient that lies elsewhere (a new
  // one from backward after zero_grad(set_to_none)) into it, or zeros when it has none.
  void placeGradient(Parameter& parameter);
  void markAccumulated(std::size_t index);
  void resetStep();
  void makeBuckets(const DistributedDataParallelOptions& options);
  void registerHooks();
  void removeHooks() noexcept;

  Communicator comm_;                  // our own duplicate, for the broadcasts
  std::vector<Parameter> parameters_;  // those with requires_grad, in registration order
  std::vector<detail::NamedTensor> buffers_;
  std::vector<Bucket> buckets_;  // launch order
  std::unique_ptr<GradientAverager> averager_;
  bool noSync_ = false;
};

}  // namespace ringsync::torch
