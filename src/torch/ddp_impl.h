// The state behind a DistributedDataParallel: the buckets it owns, one slot per parameter, the
// hooks registered on autograd and the GradientAverager that all-reduces the buckets.
//
// The averager is handed DDP's buckets as they are (GradientAveragerOptions::groups): a CPU
// bucket as one averager gradient per parameter (its view at first, then wherever backward put
// .grad: markReadyAt), a CUDA bucket as one gradient, its whole tensor (device gradients cannot
// move). Averager indices are given so that its launch order (lowest index, highest first) is
// ours: bucket k of B holds the k-th highest block of indices.
//
// Threads: the hook runs on autograd's thread for the parameter's device (the caller's thread for
// CPU tensors), so a module with CPU and CUDA parameters has hooks on two threads at once: their
// calls into the averager (not thread-safe) take averagerMutex_. synchronize() runs on the
// caller's after backward has returned, so it never runs beside a hook.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
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
    std::size_t gradient = 0;  // its averager index (CPU buckets)
    // Its gradient's place in the bucket, shaped like the parameter. Made with set_() on the
    // bucket's storage, not as an autograd view: libtorch's zero_grad() calls detach_() on every
    // .grad, which autograd refuses on a view ("Can't detach views in-place").
    at::Tensor view;
    c10::intrusive_ptr<::torch::autograd::Node> accumulator;  // kept alive: its hooks are ours
    ::torch::autograd::FunctionPreHook* preHook = nullptr;    // owned by the accumulator
    std::uintptr_t postHookKey = 0;
    bool accumulated = false;  // this step
    at::Tensor marked;         // the .grad handed to the averager this step, held until its end
  };
  struct Bucket {
    at::Tensor flat;
    std::vector<std::size_t> members;
    bool onDevice = false;
    std::size_t gradient = 0;  // its averager index (CUDA buckets)
    std::size_t pending = 0;   // members not yet accumulated this step (CUDA buckets)
    // CPU: the core packed this bucket (it cannot reduce scattered tensors here), so gradients
    // are copied into the bucket instead: one pass rather than a pack and an unpack.
    bool copyIntoView = false;
  };

  // Where parameter `p`'s gradient is averaged this step: its .grad itself when the averager can
  // take it (a CPU bucket's dense contiguous gradient), else the bucket view after placeGradient.
  // InvalidArgument naming the parameter for a gradient that does not match it.
  const void* prepareGradient(Parameter& p);
  // Makes the parameter's .grad its bucket view, copying a gradient that lies elsewhere (a new
  // one from backward after zero_grad(set_to_none)) into it, or zeros when it has none.
  void placeGradient(Parameter& parameter);
  // Parameter `index`'s gradient, at `where` (prepareGradient), is final for this step.
  void markAccumulated(std::size_t index, const void* where);
  void notePackedBuckets();  // after a step: CPU buckets the core packed copy into views from now on
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
  std::mutex averagerMutex_;  // the hooks' averager calls (CPU and CUDA hooks run on two threads)
};

}  // namespace ringsync::torch
