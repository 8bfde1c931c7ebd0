// The Work a ringsync collective returns: completed on the progress thread when its job has run.
//  - wait() (dist.all_reduce(...), users) rethrows ringsync's own exception, which the module's
//    translator turns into ringsync.MismatchError, TimeoutError, ... with ringsync's message;
//  - getFuture() (what DDP and comm hooks chain on) completes with the output tensors, or fails
//    with a std::runtime_error "MismatchError: <ringsync's message>", which torch's C++ side
//    (DDP's backward) and Python's future.wait() both report as such.
#pragma once

#include <exception>
#include <vector>

#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace ringsync::torch_backend {

class RingsyncWork : public ::c10d::Work {
 public:
  // outputs: what the future completes with; devices: the CUDA devices among them (the future
  // then records its completion on their current streams), empty for host tensors.
  RingsyncWork(int rank, ::c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<c10::Device> devices);

  // Exactly one of these, once, on the thread that ran the collective.
  void succeed();
  void fail(std::exception_ptr error);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace ringsync::torch_backend
