// DistributedDataParallel's construction (the model's check and broadcast, the buckets, the
// averager, the hooks), its teardown, and the public face. Each step's work: ddp_step.cc.
#include <algorithm>
#include <set>
#include <utility>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/module.h>

#include "bucket_layout.h"
#include "ddp_impl.h"
#include "ringsync/errors.h"
#include "tensor_types.h"

namespace ringsync::torch {
namespace {

constexpr const char* kWho = "DistributedDataParallel";

// Run before and after autograd's AccumulateGrad for one parameter writes its .grad (the second is
// the hook torch's own Reducer registers). Exceptions reach the caller of backward() unchanged.
class BeforeAccumulationHook final : public ::torch::autograd::FunctionPreHook {
 public:
  BeforeAccumulationHook(DistributedDataParallel::Impl* ddp, std::size_t index) : ddp_(ddp), index_(index) {}
  ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& grads) override {
    ddp_->beforeGradientAccumulated(index_);
    return grads;
  }

 private:
  DistributedDataParallel::Impl* ddp_;
  std::size_t index_;
};

class GradientAccumulatedHook final : public ::torch::autograd::FunctionPostHook {
 public:
  GradientAccumulatedHook(DistributedDataParallel::Impl* ddp, std::size_t index) : ddp_(ddp), index_(index) {}
  ::torch::autograd::variable_list operator()(const ::torch::autograd::variable_list& outputs,
                                              const ::torch::autograd::variable_list& /*inputs*/) override {
    ddp_->onGradientAccumulated(index_);
    return outputs;
  }

 private:
  DistributedDataParallel::Impl* ddp_;
  std::size_t index_;
};

void requireTrainable(const detail::NamedTensor& named) {
  const std::string who = std::string(kWho) + ": parameter '" + named.name + "'";
  detail::requireDense(named.tensor, who);
  if (!at::isFloatingType(named.tensor.scalar_type()) || !dataTypeOf(named.tensor.scalar_type()))
    throw InvalidArgument(who + " is a " + detail::describeTensor(named.tensor) +
                          "; gradients are averaged in float16, bfloat16, float32 or float64");
  if (!named.tensor.is_leaf())
    throw InvalidArgument(who +
                          " is not a leaf tensor (it was computed from others), so autograd never "
                          "accumulates a gradient into it");
}

std::vector<int64_t> contiguousStrides(c10::IntArrayRef sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (std::size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

}  // namespace

DistributedDataParallel::Impl::Impl(const Communicator& comm, ::torch::nn::Module& module,
                                    const DistributedDataParallelOptions& options)
    : comm_(comm.duplicate()) {
  detail::ModelTensors model = detail::collectModel(module);
  detail::checkSameModelOnAllRanks(comm_, model);  // from here on every rank decides alike
  std::set<const c10::TensorImpl*> seen;           // a parameter registered under two names (tied weights) once
  for (const detail::NamedTensor& named : model.parameters) {
    if (!named.tensor.requires_grad() || !seen.insert(named.tensor.unsafeGetTensorImpl()).second) continue;
    requireTrainable(named);
    Parameter& p = parameters_.emplace_back();
    p.name = named.name;
    p.tensor = named.tensor;
  }
  detail::broadcastFromRankZero(comm_, model.parameters);
  detail::broadcastFromRankZero(comm_, model.buffers);
  buffers_ = std::move(model.buffers);
  makeBuckets(options);

  // The averager takes our buckets as they are (groups). It launches the bucket with the highest
  // indices first, so the last of ours gets the lowest block: bucket k launches k-th.
  std::vector<GradientBuffer> gradients;
  GradientAveragerOptions averagerOptions;
  averagerOptions.groups.resize(buckets_.size());
  for (std::size_t k = buckets_.size(); k-- > 0;) {
    Bucket& bucket = buckets_[k];
    const DataType type = *dataTypeOf(bucket.flat.scalar_type());
    std::vector<std::size_t>& group = averagerOptions.groups[k];
    if (bucket.onDevice) {
      bucket.gradient = gradients.size();
      group.push_back(bucket.gradient);
      gradients.push_back({bucket.flat.data_ptr(), static_cast<std::size_t>(bucket.flat.numel()), type});
      continue;
    }
    for (std::size_t member : bucket.members) {  // ascending, as the views lie in the bucket
      Parameter& p = parameters_[member];
      p.gradient = gradients.size();
      group.push_back(p.gradient);
      gradients.push_back({p.view.data_ptr(), static_cast<std::size_t>(p.view.numel()), type});
    }
  }
  averagerOptions.overlap = options.overlap;
  averagerOptions.op = ReduceOp::kAvg;
  averager_ = std::make_unique<GradientAverager>(comm_, std::move(gradients), averagerOptions);
  registerHooks();
}

DistributedDataParallel::Impl::~Impl() { removeHooks(); }

void DistributedDataParallel::Impl::makeBuckets(const DistributedDataParallelOptions& options) {
  std::vector<detail::ParameterShape> shapes;
  shapes.reserve(parameters_.size());
  for (const Parameter& p : parameters_)
    shapes.push_back({static_cast<std::size_t>(p.tensor.numel()), p.tensor.scalar_type(), p.tensor.device()});
  const std::size_t bucketBytes = options.bucketBytes ? options.bucketBytes : comm_.options().bucketBytes;
  const std::size_t firstBytes = options.firstBucketBytes ? options.firstBucketBytes : comm_.options().firstBucketBytes;
  const at::NoGradGuard noGrad;
  for (const detail::BucketLayout& layout : detail::planBuckets(shapes, bucketBytes, firstBytes)) {
    Bucket bucket;
    const auto place = at::TensorOptions().dtype(layout.dtype).device(layout.device);
    bucket.flat = at::zeros({static_cast<int64_t>(layout.count)}, place);
    bucket.members = layout.parameters;
    bucket.onDevice = !layout.device.is_cpu();
    bucket.pending = layout.parameters.size();
    for (std::size_t j = 0; j < layout.parameters.size(); ++j) {
      Parameter& p = parameters_[layout.parameters[j]];
      p.bucket = buckets_.size();
      p.view = at::empty({0}, bucket.flat.options())
                   .set_(bucket.flat.storage(), static_cast<int64_t>(layout.offsets[j]), p.tensor.sizes(),
                         contiguousStrides(p.tensor.sizes()));
      // A gradient from before keeps its values; none is zeros. Either way .grad starts as the
      // view, so that zero_grad(set_to_none=false) has backward accumulate into the bucket.
      placeGradient(p);
    }
    buckets_.push_back(std::move(bucket));
  }
}

void DistributedDataParallel::Impl::registerHooks() {
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Parameter& p = parameters_[i];
    p.accumulator = ::torch::autograd::impl::grad_accumulator(p.tensor);
    if (!p.accumulator)
      throw InvalidArgument(std::string(kWho) + ": parameter '" + p.name + "' has no gradient accumulator");
    auto preHook = std::make_unique<BeforeAccumulationHook>(this, i);
    p.preHook = preHook.get();
    p.accumulator->add_pre_hook(std::move(preHook));
    p.postHookKey = p.accumulator->add_post_hook(std::make_unique<GradientAccumulatedHook>(this, i));
  }
}

void DistributedDataParallel::Impl::removeHooks() noexcept {
  for (Parameter& p : parameters_) {
    if (!p.accumulator) continue;
    auto& preHooks = p.accumulator->pre_hooks();  // Node has no del_pre_hook: found by address
    const auto ours = [&](const auto& hook) { return hook.get() == p.preHook; };
    preHooks.erase(std::remove_if(preHooks.begin(), preHooks.end(), ours), preHooks.end());
    p.accumulator->del_post_hook(p.postHookKey);
    p.accumulator.reset();
  }
}

void DistributedDataParallel::Impl::broadcastBuffers() { detail::broadcastFromRankZero(comm_, buffers_); }

// --- the public face -------------------------------------------------------------------------

DistributedDataParallel::DistributedDataParallel(const Communicator& comm, ::torch::nn::Module& module,
                                                 const DistributedDataParallelOptions& options)
    : impl_(std::make_unique<Impl>(comm, module, options)) {}

DistributedDataParallel::~DistributedDataParallel() = default;
DistributedDataParallel::DistributedDataParallel(DistributedDataParallel&&) noexcept = default;
DistributedDataParallel& DistributedDataParallel::operator=(DistributedDataParallel&&) noexcept = default;

void DistributedDataParallel::synchronize() { impl_->synchronize(); }
void DistributedDataParallel::broadcastBuffers() { impl_->broadcastBuffers(); }

DistributedDataParallel::NoSync DistributedDataParallel::noSync() { return NoSync(*this); }

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& ddp) : ddp_(ddp) {
  if (ddp_.impl_->noSync_) throw InvalidArgument(std::string(kWho) + "::noSync: already inside a noSync() scope");
  for (const Impl::Parameter& p : ddp_.impl_->parameters_)
    if (p.accumulated)
      throw InvalidArgument(std::string(kWho) +
                            "::noSync: a backward has started this step's all-reduces "
                            "(parameter '" +
                            p.name + "'); call synchronize() first");
  ddp_.impl_->noSync_ = true;
}

DistributedDataParallel::NoSync::~NoSync() { ddp_.impl_->noSync_ = false; }

std::size_t DistributedDataParallel::parameterCount() const { return impl_->parameters_.size(); }
std::size_t DistributedDataParallel::bucketCount() const { return impl_->buckets_.size(); }

std::vector<std::size_t> DistributedDataParallel::bucketSizes() const {
  std::vector<std::size_t> sizes;
  for (const Impl::Bucket& b : impl_->buckets_) sizes.push_back(static_cast<std::size_t>(b.flat.numel()));
  return sizes;
}

bool DistributedDataParallel::overlapping() const { return impl_->averager_->overlapping(); }
GradientAveragerStats DistributedDataParallel::stats() const { return impl_->averager_->stats(); }
std::vector<BucketTiming> DistributedDataParallel::lastStepBuckets() const {
  return impl_->averager_->lastStepBuckets();
}

}  // namespace ringsync::torch
