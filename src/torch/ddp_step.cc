// One DistributedDataParallel step: the hook places each gradient in its bucket and starts the
// bucket's all-reduce when the bucket is complete; synchronize() completes what backward left
// (parameters that got no gradient) and waits for the averager.
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
  placeGradient(parameters_[index]);
  // Inside noSync() the gradient stays in the bucket; the next backward adds to it in place.
  if (!noSync_) markAccumulated(index);
}

void DistributedDataParallel::Impl::placeGradient(Parameter& p) {
  at::Tensor& grad = p.tensor.mutable_grad();
  if (isTheView(grad, p.view)) return;  // backward accumulated into the bucket itself
  const at::NoGradGuard noGrad;
  if (!grad.defined()) {
    p.view.zero_();
  } else {
    if (grad.layout() != c10::kStrided)
      throw InvalidArgument("DistributedDataParallel: parameter '" + p.name +
                            "' has a sparse gradient; ringsync averages dense gradients (use sparse=false)");
    if (grad.sizes() != p.tensor.sizes() || grad.scalar_type() != p.tensor.scalar_type() ||
        grad.device() != p.tensor.device())
      throw InvalidArgument("DistributedDataParallel: parameter '" + p.name + "' has a gradient that is a " +
                            detail::describeTensor(grad) + "; it must match the parameter, a " +
                            detail::describeTensor(p.tensor));
    p.view.copy_(grad);
  }
  grad = p.view;
}

void DistributedDataParallel::Impl::markAccumulated(std::size_t index) {
  Parameter& p = parameters_[index];
  p.accumulated = true;
  Bucket& bucket = buckets_[p.bucket];
  if (--bucket.pending > 0) return;
  // The gradients were written on this thread's current stream (CUDA): the averager's stream waits
  // for it. Host buckets ignore the stream.
  CUstream_st* stream = detail::currentStream(bucket.flat, "DistributedDataParallel");
  averager_->markReady(buckets_.size() - 1 - p.bucket, stream);
}

void DistributedDataParallel::Impl::synchronize() {
  if (noSync_)
    throw InvalidArgument(
        "DistributedDataParallel::synchronize: called inside a noSync() scope; end the scope "
        "first (the backward after it starts the all-reduces)");
  // Parameters backward did not reach on this rank contribute zeros (or what they accumulated
  // inside noSync()). Checked before any is marked, so a bad gradient leaves the step untouched.
  for (Parameter& p : parameters_)
    if (!p.accumulated) placeGradient(p);
  for (std::size_t i = parameters_.size(); i-- > 0;)
    if (!parameters_[i].accumulated) markAccumulated(i);
  try {
    averager_->synchronize();
  } catch (...) {
    resetStep();  // the averager has ended its step too
    throw;
  }
  resetStep();
}

void DistributedDataParallel::Impl::resetStep() {
  for (Parameter& p : parameters_) p.accumulated = false;
  for (Bucket& b : buckets_) b.pending = b.members.size();
}

}  // namespace ringsync::torch
