#include "point_to_point.h"

#include <chrono>
#include <utility>

#include "abandoned_memory.h"
#include "mpi_polling.h"
#include "ringsync/errors.h"

namespace ringsync::torch_backend {

struct PointToPoint::Pending {
  Message message;
  MPI_Request request = MPI_REQUEST_NULL;
  std::unique_ptr<ByteCount> count;
  double seconds = 0;  // 0: no deadline
  std::chrono::steady_clock::time_point deadline;

  bool expired() const { return seconds > 0 && std::chrono::steady_clock::now() >= deadline; }
};

namespace {

// Gives up on a message still pending. Returns true when it completed after all (a receive whose
// message arrived meanwhile: its status is in `status`); otherwise its memory is left to MPI for
// good, unless the receive could be cancelled.
template <typename P> bool giveUp(P& p, MPI_Status& status) {
  if (p.message.receive) {
    MPI_Cancel(&p.request);
    int done = 0;
    if (MPI_Test(&p.request, &done, &status) == MPI_SUCCESS && done) {
      int cancelled = 0;
      MPI_Test_cancelled(&status, &cancelled);
      return !cancelled;
    }
  }
  if (p.request != MPI_REQUEST_NULL) MPI_Request_free(&p.request);  // MPI finishes it in the background
  keepUntilExit(p.message.memory);
  return false;
}

template <typename P> std::exception_ptr outcome(P& p, int code, const MPI_Status& status) {
  if (code != MPI_SUCCESS) {
    if (p.request != MPI_REQUEST_NULL) MPI_Request_free(&p.request);  // Open MPI keeps a failed one
    int errorClass = MPI_SUCCESS;
    MPI_Error_class(code, &errorClass);
    if (errorClass == MPI_ERR_TRUNCATE)
      return std::make_exception_ptr(MismatchError("ringsync backend: " + p.message.what +
                                                   ": the message is larger than "
                                                   "the tensor's " +
                                                   std::to_string(p.message.bytes) + " bytes"));
    return std::make_exception_ptr(
        BackendError("ringsync backend: " + p.message.what + " failed: " + mpiErrorText(code)));
  }
  if (!p.message.receive) return nullptr;
  MPI_Count bytes = 0;
  MPI_Get_elements_x(&status, MPI_BYTE, &bytes);
  if (static_cast<std::size_t>(bytes) == p.message.bytes) return nullptr;
  return std::make_exception_ptr(MismatchError("ringsync backend: " + p.message.what + ": rank " +
                                               std::to_string(status.MPI_SOURCE) + " sent " + std::to_string(bytes) +
                                               " bytes, the tensor holds " + std::to_string(p.message.bytes)));
}

template <typename P> void report(P& p, int source, std::exception_ptr error) noexcept {
  try {
    p.message.done(source, std::move(error));
  } catch (...) {  // `done` settles a Work; nothing of it may end the poller
  }
}

}  // namespace

PointToPoint::PointToPoint(MPI_Comm comm, const Options& options)
    : comm_(comm), options_(options), state_(std::make_shared<State>()) {
  int* tagUpperBound = nullptr;
  int found = 0;
  if (MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tagUpperBound, &found) == MPI_SUCCESS && found)
    maxTag_ = *tagUpperBound - kReservedTags;
  poller_ = std::thread([state = state_, spin = options.spinWait] { run(state, spin); });
}

PointToPoint::~PointToPoint() { close(); }

void PointToPoint::post(Message message) {
  if (message.tag < 0 || message.tag > maxTag_)
    throw InvalidArgument("ringsync backend: " + message.what + ": tag " + std::to_string(message.tag) +
                          " is outside MPI's range 0.." + std::to_string(maxTag_));
  auto pending = std::make_unique<Pending>();
  pending->count = std::make_unique<ByteCount>(message.bytes);
  pending->seconds = options_.timeoutSeconds;
  pending->deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(options_.timeoutSeconds > 0 ? options_.timeoutSeconds : 0));
  pending->message = std::move(message);
  Pending& p = *pending;
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->abortReason.empty())
    throw AbortedError("ringsync backend: " + p.message.what + ": the group was aborted (" + state_->abortReason + ")");
  if (state_->closing) throw AbortedError("ringsync backend: " + p.message.what + ": the group was shut down");
  const int code = p.message.receive ? MPI_Irecv(p.message.data, p.count->count(), p.count->type(), p.message.peer,
                                                 p.message.tag, comm_, &p.request)
                                     : MPI_Isend(p.message.data, p.count->count(), p.count->type(), p.message.peer,
                                                 p.message.tag, comm_, &p.request);
  checkMpi(code, p.message.receive ? "MPI_Irecv" : "MPI_Isend");
  state_->incoming.push_back(std::move(pending));
  lock.unlock();
  state_->wake.notify_one();
}

void PointToPoint::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->abortReason.empty()) state_->abortReason = reason.empty() ? "aborted" : reason;
  }
  state_->wake.notify_one();
}

void PointToPoint::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->closing = true;
  }
  state_->wake.notify_one();
  if (!poller_.joinable()) return;
  if (poller_.get_id() == std::this_thread::get_id()) {
    poller_.detach();
  } else {
    poller_.join();
  }
}

// Whether `p` is done (its outcome reported), testing it once.
bool PointToPoint::settle(Pending& p, const std::string& abortReason, bool closing) {
  const bool receiveAtClose = closing && p.message.receive;
  std::exception_ptr error;
  int source = p.message.peer;
  MPI_Status status;
  if (!abortReason.empty() || receiveAtClose || p.expired()) {
    if (giveUp(p, status)) {  // a receive completed just now after all: its message arrived
      error = outcome(p, MPI_SUCCESS, status);
      source = status.MPI_SOURCE;
    } else if (!abortReason.empty()) {
      error = std::make_exception_ptr(
          AbortedError("ringsync backend: " + p.message.what + ": the group was aborted (" + abortReason + ")"));
    } else if (receiveAtClose) {
      error = std::make_exception_ptr(
          AbortedError("ringsync backend: " + p.message.what + ": the group was shut down before a message arrived"));
    } else {
      const std::string peer = p.message.peer == MPI_ANY_SOURCE ? std::string("(any)") : std::to_string(p.message.peer);
      error = std::make_exception_ptr(
          TimeoutError("ringsync backend: " + p.message.what + " timed out after " + std::to_string(p.seconds) +
                       " s: rank " + peer + (p.message.receive ? " sent no matching message" : " did not receive it") +
                       " (RINGSYNC_TIMEOUT_SECONDS, or the group's timeout=)"));
    }
  } else {
    int done = 0;
    const int code = MPI_Test(&p.request, &done, &status);
    if (code == MPI_SUCCESS && !done) return false;
    error = outcome(p, code, status);
    if (p.message.receive && code == MPI_SUCCESS) source = status.MPI_SOURCE;
  }
  report(p, source, error);
  return true;
}

void PointToPoint::run(const std::shared_ptr<State>& state, bool spinWait) {
  State& s = *state;
  std::list<std::unique_ptr<Pending>> active;
  IdleWait idle(spinWait);
  for (;;) {
    std::string abortReason;
    bool closing = false;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      if (active.empty()) s.wake.wait(lock, [&s] { return s.closing || !s.incoming.empty(); });
      active.splice(active.end(), s.incoming);
      abortReason = s.abortReason;
      closing = s.closing;
    }
    if (active.empty()) {
      if (closing) return;
      continue;
    }
    bool progressed = false;
    for (auto it = active.begin(); it != active.end();) {
      if (settle(**it, abortReason, closing)) {
        it = active.erase(it);
        progressed = true;
      } else {
        ++it;
      }
    }
    if (progressed) {
      idle.progressed();
    } else {
      idle.pause();
    }
  }
}

}  // namespace ringsync::torch_backend
