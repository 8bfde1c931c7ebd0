#include "ringsync_work.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "caller_stream.h"
#include "ringsync/errors.h"

namespace ringsync::torch_backend {
namespace {

// What DDP's callbacks and Python's future.wait() see: ringsync's message, prefixed with the
// error's kind (the future carries one C++ exception type; Work.wait() keeps the exact one).
std::exception_ptr forFuture(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    return std::make_exception_ptr(std::runtime_error(std::string(errorCodeName(e.code())) + ": " + e.what()));
  } catch (...) {
    return std::current_exception();
  }
}

}  // namespace

RingsyncWork::RingsyncWork(int rank, ::c10d::OpType type, std::vector<at::Tensor> outputs,
                           std::vector<c10::Device> devices)
    : ::c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()),
                                                       std::move(devices))) {}

void RingsyncWork::settle(std::shared_ptr<c10::Event> done, std::exception_ptr error) {
  done_ = std::move(done);  // before finish(): a waiter reads it once completed_ is set (under the mutex)
  error_ = error;
  finish(error);
}

void RingsyncWork::completeFuture() {
  if (error_) {
    future_->setError(forFuture(error_));
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

int RingsyncWork::sourceRank() const {
  if (sourceRank_ < 0) return ::c10d::Work::sourceRank();  // torch's error: not a recv_anysource
  return sourceRank_;
}

void RingsyncWork::synchronize() {
  if (done_) CallerStream::blockCurrentStream(*done_);
}

void RingsyncWork::blockCurrentStream() {
  ::c10d::Work::wait();  // the device work is queued on its stream only once the job ran
}

c10::intrusive_ptr<c10::ivalue::Future> RingsyncWork::getFuture() { return future_; }

std::vector<at::Tensor> RingsyncWork::result() { return outputs_; }

}  // namespace ringsync::torch_backend
