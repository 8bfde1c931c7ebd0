// The Work a ringsync collective or point-to-point call returns. Two steps, on two threads:
//  - settle(), where the call ran (the progress thread, the point-to-point poller, or the caller
//    for an inline call): wait() returns from here on, rethrowing ringsync's own exception, which
//    the Python module turns into ringsync.MismatchError, TimeoutError, ... with its message;
//  - completeFuture(), on the group's CompletionPool: getFuture() (what DDP and comm hooks chain
//    on) completes with the output tensors, or fails with a std::runtime_error "MismatchError:
//    <ringsync's message>", which torch's C++ side (DDP's backward) and Python's future.wait() both
//    report as such. Its callbacks run there, never where collectives run: a callback may wait for
//    the group's next collective (PowerSGD).
// For CUDA tensors wait() also makes the caller's current stream wait for the collective's stream
// (as ProcessGroupNCCL's does), so results read after switching streams are ordered.
#pragma once

#include <exception>
#include <memory>
#include <vector>

#include <ATen/core/ivalue.h>
#include <c10/core/Event.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace ringsync::torch_backend {

class RingsyncWork : public ::c10d::Work {
 public:
  // outputs: what the future completes with; devices: the CUDA devices among them (the future
  // then records its completion on their current streams), empty for host tensors.
  RingsyncWork(int rank, ::c10d::OpType type, std::vector<at::Tensor> outputs, std::vector<c10::Device> devices);

  // Once, where the call ran: `done` is the event recorded after its device work (null on the
  // host), `error` its failure (null: success). Wakes wait().
  void settle(std::shared_ptr<c10::Event> done, std::exception_ptr error);
  // Once, after settle(): completes the future (runs its callbacks).
  void completeFuture();
  // recv_anysource: the rank the message came from (before settle()).
  void setSourceRank(int rank) { sourceRank_ = rank; }

  int sourceRank() const override;
  void synchronize() override;  // wait()'s last step: the current CUDA stream waits
  void blockCurrentStream() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override;

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<c10::Event> done_;
  std::exception_ptr error_;
  int sourceRank_ = -1;
};

}  // namespace ringsync::torch_backend
