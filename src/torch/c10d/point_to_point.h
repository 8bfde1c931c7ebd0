// A process group's send / recv / recv_anysource, over MPI's own point-to-point calls on the
// group's MPI communicator (a duplicate of ringsync's, so no message can meet ringsync's traffic).
//
// A message is posted at once, on the caller's thread (MPI_Isend / MPI_Irecv), never queued behind
// the group's collectives: two ranks that each send and then receive (a pipeline stage's
// exchange, batch_isend_irecv) must find both posted, or a large message (a rendezvous) waits for
// a receive that is queued behind it. MPI keeps the order of messages between two ranks with one
// tag. One poller thread tests the posted messages with ringsync's idle policy and reports each
// one's outcome once, on that thread:
//  - a receive whose message has another size: MismatchError naming both sizes (the message is
//    consumed; nothing of it is written beyond the tensor);
//  - a message still pending at its deadline (Options::timeoutSeconds from posting): TimeoutError
//    naming the peer; a receive is cancelled when MPI can still cancel it, and otherwise (already
//    matched) its memory is kept until the process ends (abandoned_memory.h), as is a send's;
//  - abort(): every pending message fails with AbortedError, the same way.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <mpi.h>

#include "ringsync/options.h"

namespace ringsync::torch_backend {

class PointToPoint {
 public:
  struct Message {
    bool receive = false;
    int peer = MPI_ANY_SOURCE;  // a receive from any rank: MPI_ANY_SOURCE
    int tag = 0;
    void* data = nullptr;
    std::size_t bytes = 0;
    std::string what;                    // for messages: "send of torch.float32 x 4 to rank 1 (tag 0)"
    std::shared_ptr<const void> memory;  // owns `data` until the message is done (or forever)
    // Called once on the poller thread: the rank the message came from (receives), and the
    // failure (null on success).
    std::function<void(int source, std::exception_ptr error)> done;
  };

  // comm: the group's MPI communicator for these messages (errors returned, not fatal).
  PointToPoint(MPI_Comm comm, const Options& options);
  ~PointToPoint();  // close()
  PointToPoint(const PointToPoint&) = delete;
  PointToPoint& operator=(const PointToPoint&) = delete;

  // The largest tag a user's message may carry; the kReservedTags above it are the backend's own
  // (reservedTag(0): split_group's meeting of members, reservedTag(1): monitored_barrier).
  static constexpr int kReservedTags = 2;
  int maxTag() const { return maxTag_; }
  int reservedTag(int which) const { return maxTag_ + 1 + which; }
  // Posts `message` now. InvalidArgument for a tag outside MPI's range, AbortedError after
  // abort() or close(), BackendError when MPI refuses it.
  void post(Message message);
  // Every pending message fails with AbortedError(reason); later posts raise it. Does not wait.
  void abort(const std::string& reason);
  // Pending receives fail with AbortedError (cancelled); pending sends are waited for, up to their
  // deadlines; then the poller stops. Idempotent.
  void close() noexcept;

 private:
  struct Pending;
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::list<std::unique_ptr<Pending>> incoming;  // posted, not yet seen by the poller
    std::string abortReason;                       // non-empty: aborted
    bool closing = false;
  };
  static void run(const std::shared_ptr<State>& state, bool spinWait);
  static bool settle(Pending& pending, const std::string& abortReason, bool closing);

  MPI_Comm comm_;
  Options options_;
  int maxTag_ = 32767 - kReservedTags;
  std::shared_ptr<State> state_;
  std::thread poller_;
};

}  // namespace ringsync::torch_backend
