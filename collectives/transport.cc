#include "transport.h"

#include <algorithm>
#include <climits>

#include "mpi_check.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

int toMpiCount(std::size_t bytes) {
  if (bytes > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument("message of " + std::to_string(bytes) + " bytes exceeds MPI's int count");
  return static_cast<int>(bytes);
}

std::string joinPeers(const std::vector<int>& peers) {
  std::string text;
  for (std::size_t i = 0; i < peers.size(); ++i) text += (i ? ", " : "") + std::to_string(peers[i]);
  return text;
}

}  // namespace

Deadline::Deadline(const CallHeader& call, double timeoutSeconds, double stallWarnSeconds, WarnFn warn,
                   const IdleWaitPolicy& wait)
    : call_(call),
      start_(std::chrono::steady_clock::now()),
      timeoutSeconds_(timeoutSeconds),
      stallWarnSeconds_(stallWarnSeconds),
      warn_(std::move(warn)),
      wait_(wait) {}

bool Deadline::thresholdReached() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return (!warned_ && stallWarnSeconds_ > 0 && elapsed >= stallWarnSeconds_) ||
         (timeoutSeconds_ > 0 && elapsed >= timeoutSeconds_);
}

void Deadline::checkClock(const std::vector<int>& peers) {
  if (peerNames_ == nullptr) return checkClockFor("rank(s) " + joinPeers(peers));
  std::vector<int> named;
  for (int peer : peers)
    named.push_back(peer >= 0 && static_cast<std::size_t>(peer) < peerNames_->size()
                        ? (*peerNames_)[static_cast<std::size_t>(peer)]
                        : peer);
  checkClockFor("rank(s) " + joinPeers(named));
}

void Deadline::checkClockFor(const std::string& waitingFor) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (!warned_ && stallWarnSeconds_ > 0 && elapsed >= stallWarnSeconds_) {
    warned_ = true;
    if (warn_)
      warn_(describeCall(call_) + " has been waiting " + std::to_string(static_cast<int>(elapsed)) + " s for " +
            waitingFor);
  }
  if (timeoutSeconds_ > 0 && elapsed >= timeoutSeconds_) {
    throw TimeoutError(describeCall(call_) + " timed out after " + std::to_string(timeoutSeconds_) + " s waiting for " +
                       waitingFor + " (RINGSYNC_TIMEOUT_SECONDS); the communicator is now aborted");
  }
}

RequestGroup::RequestGroup(MPI_Comm comm, std::size_t capacity)
    : comm_(comm),
      capacity_(capacity),
      heap_(capacity > kInlineSlots ? std::make_unique<Slot[]>(capacity) : nullptr),
      slots_(heap_ ? heap_.get() : inline_.data()) {}

RequestGroup::~RequestGroup() {
  std::size_t active = 0;
  for (std::size_t slot = 0; slot < capacity_; ++slot) active += slots_[slot].request != MPI_REQUEST_NULL;
  if (active == 0) return;
  // A communicator destroyed after MPI_Finalize (e.g. at interpreter exit) must not call MPI.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (std::size_t slot = 0; slot < capacity_; ++slot) {
    Slot& s = slots_[slot];
    if (s.request == MPI_REQUEST_NULL) continue;
    // An abandoned receive may still be matched later; the communicator is aborted by then and
    // keeps its scratch memory alive, so a late write cannot land in freed memory we own.
    if (s.isRecv) MPI_Cancel(&s.request);
    MPI_Request_free(&s.request);
  }
}

void RequestGroup::send(std::size_t slot, const void* data, std::size_t bytes, int peer, int tag) {
  Slot& s = slots_[slot];
  RINGSYNC_CHECK_MPI(MPI_Isend(data, toMpiCount(bytes), MPI_BYTE, peer, tag, comm_, &s.request));
  s.peer = peer;
  s.isRecv = false;
}

void RequestGroup::recv(std::size_t slot, void* data, std::size_t bytes, int peer, int tag) {
  Slot& s = slots_[slot];
  RINGSYNC_CHECK_MPI(MPI_Irecv(data, toMpiCount(bytes), MPI_BYTE, peer, tag, comm_, &s.request));
  s.peer = peer;
  s.isRecv = true;
  s.received = 0;
}

bool RequestGroup::test(std::size_t slot) {
  Slot& s = slots_[slot];
  if (s.request == MPI_REQUEST_NULL) return true;
  int done = 0;
  MPI_Status status;
  RINGSYNC_CHECK_MPI(MPI_Test(&s.request, &done, &status));
  if (done && s.isRecv) {
    int count = 0;
    RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
    s.received = static_cast<std::size_t>(count);
  }
  return done != 0;
}

void RequestGroup::wait(std::size_t slot, Deadline& deadline) {
  while (!test(slot)) deadline.idle([&] { return std::vector<int>{slots_[slot].peer}; });
  deadline.progressed();
}

void RequestGroup::waitAll(Deadline& deadline) {
  std::size_t next = 0;
  while (next < capacity_) {
    if (test(next)) {
      ++next;
      deadline.progressed();
    } else {
      deadline.idle([this] { return pendingPeers(); });
    }
  }
}

void RequestGroup::waitDiscarding(std::size_t slot, Deadline& deadline) {
  Slot& s = slots_[slot];
  while (s.request != MPI_REQUEST_NULL) {
    int done = 0;
    const int code = MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    int errorClass = MPI_SUCCESS;
    if (code != MPI_SUCCESS) MPI_Error_class(code, &errorClass);
    if (errorClass == MPI_ERR_TRUNCATE) {
      // Open MPI leaves a request that completed with an error allocated: release it here.
      if (s.request != MPI_REQUEST_NULL) MPI_Request_free(&s.request);
      s.request = MPI_REQUEST_NULL;
      break;
    }
    RINGSYNC_CHECK_MPI(code);
    if (!done) deadline.idle([&] { return std::vector<int>{s.peer}; });
  }
  deadline.progressed();
}

void RequestGroup::cancel(std::size_t slot) {
  Slot& s = slots_[slot];
  if (s.request == MPI_REQUEST_NULL) return;
  RINGSYNC_CHECK_MPI(MPI_Cancel(&s.request));
  // Cancelling a receive is local: the wait returns at once, cancelled or (if a message had
  // already matched) complete.
  RINGSYNC_CHECK_MPI(MPI_Wait(&s.request, MPI_STATUS_IGNORE));
}

std::vector<int> RequestGroup::pendingPeers() {
  std::vector<int> peers;
  for (std::size_t slot = 0; slot < capacity_; ++slot)
    if (!test(slot)) peers.push_back(slots_[slot].peer);
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace ringsync::detail
