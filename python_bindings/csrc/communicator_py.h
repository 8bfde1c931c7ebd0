// ringsync.Communicator: the C++ Communicator behind a Python object. Every collective releases
// the GIL while it runs; a mutex keeps two Python threads from entering one communicator at once
// (the C++ class is single-threaded).
#pragma once

#include <memory>
#include <mutex>

#include "lifetime.h"
#include "stream_keepalive.h"
#include "ringsync/communicator.h"

namespace ringsync::python {

class PyCommunicator final : public MpiResource {
 public:
  explicit PyCommunicator(std::unique_ptr<Communicator> comm) : comm_(std::move(comm)) {}

  // The communicator, or AbortedError once finalize() released it.
  Communicator& get();
  std::mutex& mutex() { return mutex_; }
  void releaseMpi() noexcept override;
  // Device arrays of stream-ordered calls still in flight (touched with the GIL held).
  StreamKeepAlive& inFlight() { return inFlight_; }

 private:
  std::unique_ptr<Communicator> comm_;
  std::mutex mutex_;
  StreamKeepAlive inFlight_;
};

}  // namespace ringsync::python
