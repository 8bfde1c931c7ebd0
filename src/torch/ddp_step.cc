// One DistributedDataParallel step: the hook hands each gradient to the averager (a CPU one where
// it lies, a CUDA one copied into its bucket, which starts when complete); synchronize()
// completes what backward left (parameters that got no gradient) and waits for the averager.
#include <cstring>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>

#include "ddp_impl.h"
#include "ringsync/errors.h"
#include "tensor_types.h"

namespace ringsync::torch {
namespace {

bool isTheView(const at::Tensor& grad, const at::Tensor& view) {
  return grad.defined() && grad.unsafeGetTensorImpl() == view.unsafeGetTensorImpl();
}

}  // namespace

// Before autograd adds to a gradient whose bucket may already be on the wire.
void DistributedDataParallel::Impl::beforeGradientAccumulated(std::size_t index) {
  const Parameter& p = parameters_[index];
  if (p.accumulated && !noSync_)
    throw InvalidArgument("DistributedDataParallel: parameter '" + p.name +
                          "' received a second gradient before synchronize(); call synchronize() after each "
                          "backward, or accumulate micro-batches inside a noSync() scope");
}

void DistributedDataParallel::Impl::onGradientAccumulated(std::size_t index) {
  // Inside noSync() the gradient goes to the bucket; the next backward adds to it in place.
  if (noSync_) return placeGradient(parameters_[index]);
  markAccumulated(index, prepareGradient(parameters_[index]));
}

namespace {

void checkGradient(const std::string& name, const at::Tensor& grad, const at::Tensor& parameter) {
  if (grad.layout() != c10::kStrided)
    throw InvalidArgument("DistributedDataParallel: parameter '" + name +
                          "' has a sparse gradient; ringsync averages dense gradients (use sparse=false)");
  if (grad.sizes() != parameter.sizes() || grad.scalar_type() != parameter.scalar_type() ||
      grad.device() != parameter.device())
    throw InvalidArgument("DistributedDataParallel: parameter '" + name + "' has a gradient that is a " +
                          detail::describeTensor(grad) + "; it must match the parameter, a " +
                          detail::describeTensor(parameter));
}

}  // namespace

const void* DistributedDataParallel::Impl::prepareGradient(Parameter& p) {
  const at::Tensor& grad = p.tensor.grad();
  const Bucket& bucket = buckets_[p.bucket];
  if (!bucket.onDevice && !bucket.copyIntoView && grad.defined() && !isTheView(grad, p.view)) {
    checkGradient(p.name, grad, p.tensor);
    if (grad.is_contiguous()) {
      p.marked = grad;  // kept alive until the step ends, whatever the caller does with .grad
      return grad.data_ptr();
    }
  }
  placeGradient(p);
  return p.view.data_ptr();
}

void DistributedDataParallel::Impl::placeGradient(Parameter& p) {
  at::Tensor& grad = p.tensor.mutable_grad();
  if (isTheView(grad, p.view)) return;  // backward accumulated into the bucket itself
  const at::NoGradGuard noGrad;
  if (!grad.defined()) {
    p.view.zero_();
  } else {
    checkGradient(p.name, grad, p.tensor);
    p.view.copy_(grad);
  }
  grad = p.view;
}

void DistributedDataParallel::Impl::markAccumulated(std::size_t index, const void* where) {
  Parameter& p = parameters_[index];
  p.accumulated = true;
  Bucket& bucket = buckets_[p.bucket];
  const std::lock_guard<std::mutex> lock(averagerMutex_);
  if (!bucket.onDevice) return averager_->markReadyAt(p.gradient, where);
  if (--bucket.pending > 0) return;
  // The gradients were written on this thread's current stream: the averager's stream waits for it.
  CUstream_st* stream = detail::currentStream(bucket.flat, "DistributedDataParallel");
  averager_->markReady(bucket.gradient, stream);
}

void DistributedDataParallel::Impl::synchronize() {
  if (noSync_)
    throw InvalidArgument(
        "DistributedDataParallel::synchronize: called inside a noSync() scope; end the scope "
        "first (the backward after it starts the all-reduces)");
  // Parameters backward did not reach on this rank contribute zeros (or what they accumulated
  // inside noSync()). Checked before any is marked, so a bad gradient leaves the step untouched.
  std::vector<const void*> where(parameters_.size(), nullptr);
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (!parameters_[i].accumulated) where[i] = prepareGradient(parameters_[i]);
  for (std::size_t i = parameters_.size(); i-- > 0;)
    if (!parameters_[i].accumulated) markAccumulated(i, where[i]);
  try {
    averager_->synchronize();
  } catch (...) {
    resetStep();  // the averager has ended its step too
    throw;
  }
  resetStep();
  notePackedBuckets();
}

void DistributedDataParallel::Impl::notePackedBuckets() {
  const std::vector<BucketTiming> timings = averager_->lastStepBuckets();
  for (std::size_t k = 0; k < buckets_.size() && k < timings.size(); ++k)
    if (!buckets_[k].onDevice && std::strcmp(timings[k].path, "packed") == 0) buckets_[k].copyIntoView = true;
}

void DistributedDataParallel::Impl::resetStep() {
  for (Parameter& p : parameters_) {
    p.accumulated = false;
    p.marked = at::Tensor();
  }
  for (Bucket& b : buckets_) b.pending = b.members.size();
}

}  // namespace ringsync::torch
