// Non-blocking MPI point-to-point with deadlines: the only way the algorithms move bytes.
//
// Every wait polls (MPI_Test) instead of blocking in MPI_Wait, so that a peer that never answers
// turns into a TimeoutError naming the call and the peer, and a stall into a warning, instead of a
// hang. Requests live in a RequestGroup: whatever is still in flight when the group is destroyed
// (an exception unwinding the algorithm) is cancelled where MPI allows and released.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "call_header.h"
#include "idle_wait.h"
#include "mpi_tags.h"

namespace ringsync::detail {

// Looked at now and then while a wait makes no progress, for a sign that the wait is futile (a
// peer that took another algorithm for this call, recursive_doubling_allreduce.h); may throw to
// end the wait.
class IdleWatcher {
 public:
  virtual void poll() = 0;

 protected:
  ~IdleWatcher() = default;
};

// The deadline of one collective and how to describe it when it is exceeded.
class Deadline {
 public:
  using WarnFn = std::function<void(const std::string&)>;
  Deadline(const CallHeader& call, double timeoutSeconds, double stallWarnSeconds, WarnFn warn,
           const IdleWaitPolicy& wait = {});

  // Called while a wait makes no progress: gives the core away as the wait grows (idle_wait.h),
  // warns once after the stall threshold and throws TimeoutError naming the peers after the
  // deadline. `pendingPeers()` is only evaluated once a warning or the timeout is due, so a wait
  // allocates nothing until then.
  template <typename PeersFn> void idle(PeersFn&& pendingPeers) {
    wait_.idle();
    if (++idleRounds_ % kClockEvery != 0) return;
    if (watcher_ != nullptr) watcher_->poll();
    if (thresholdReached()) checkClock(pendingPeers());
  }
  // The same for a wait on something other than peers (a GPU stream, an MPI collective in the NCCL
  // bootstrap): `waitingFor` names it in the warning and the TimeoutError.
  void idleWaitingFor(const char* waitingFor) {
    wait_.idle();
    if (++idleRounds_ % kClockEvery == 0 && thresholdReached()) checkClockFor(waitingFor);
  }
  void progressed() {
    idleRounds_ = 0;
    wait_.progressed();
  }
  const CallHeader& call() const { return call_; }
  double timeoutSeconds() const { return timeoutSeconds_; }
  // While an algorithm waits on a sub-communicator (the hierarchical all-reduce's node and
  // cross-node communicators), the peers it names are ranks there: `globalRanks[i]` is rank i's
  // rank in the caller's communicator, so that warnings and TimeoutError name those. Null: as is.
  void namePeersAs(const std::vector<int>* globalRanks) { peerNames_ = globalRanks; }
  // Every kClockEvery idle polls of the waits on peers, `watcher->poll()` (null: none).
  void watchWhileIdle(IdleWatcher* watcher) { watcher_ = watcher; }
  IdleWatcher* watcher() const { return watcher_; }

 private:
  static constexpr unsigned kClockEvery = 64;  // read the clock every this many idle rounds
  bool thresholdReached() const;               // the stall warning (not given yet) or the timeout is due
  void checkClock(const std::vector<int>& peers);
  void checkClockFor(const std::string& waitingFor);

  CallHeader call_;
  std::chrono::steady_clock::time_point start_;
  double timeoutSeconds_;
  double stallWarnSeconds_;
  WarnFn warn_;
  bool warned_ = false;
  unsigned idleRounds_ = 0;
  IdleWait wait_;
  const std::vector<int>* peerNames_ = nullptr;
  IdleWatcher* watcher_ = nullptr;
};

// While a phase of an algorithm waits on a sub-communicator: its waits name their peers as ranks
// of the whole communicator (Deadline::namePeersAs) until the scope ends.
class PeerNames {
 public:
  explicit PeerNames(Deadline& deadline) : deadline_(deadline) {}
  ~PeerNames() { deadline_.namePeersAs(nullptr); }
  PeerNames(const PeerNames&) = delete;
  PeerNames& operator=(const PeerNames&) = delete;
  void use(const std::vector<int>& globalRanks) { deadline_.namePeersAs(&globalRanks); }

 private:
  Deadline& deadline_;
};

// A fixed number of request slots. Up to kInlineSlots live inside the object, so the ring, the
// header exchange and the broadcast allocate nothing per call (a heap block only for more peers).
class RequestGroup {
 public:
  RequestGroup(MPI_Comm comm, std::size_t capacity);
  ~RequestGroup();  // cancels receives still pending and frees every active request
  RequestGroup(const RequestGroup&) = delete;
  RequestGroup& operator=(const RequestGroup&) = delete;

  // Start a transfer in slot `slot` (which must be idle). `bytes` must fit an MPI int.
  void send(std::size_t slot, const void* data, std::size_t bytes, int peer, int tag);
  void recv(std::size_t slot, void* data, std::size_t bytes, int peer, int tag);

  // True once slot's transfer has completed (or the slot was never used). Never blocks.
  bool test(std::size_t slot);
  bool active(std::size_t slot) const { return slots_[slot].request != MPI_REQUEST_NULL; }
  // Bytes a completed receive actually got (a peer may send less than the buffer holds).
  std::size_t receivedBytes(std::size_t slot) const { return slots_[slot].received; }

  // Wait for one slot / every slot, polling under the deadline.
  void wait(std::size_t slot, Deadline& deadline);
  void waitAll(Deadline& deadline);

  // For a receive posted before the call was known to match (see RingAllreduce::startEarly):
  // wait until whatever the peer sent has been consumed, accepting a message longer than the
  // buffer (MPI_ERR_TRUNCATE) as consumed too; or withdraw a receive no message will match.
  void waitDiscarding(std::size_t slot, Deadline& deadline);
  void cancel(std::size_t slot);

  // Peers of the transfers still in flight (for timeout messages), ascending, no duplicates.
  // Tests every active slot first: waits go slot by slot, so later slots may have completed
  // without being tested, and naming their peers would blame ranks that did answer.
  std::vector<int> pendingPeers();

 private:
  struct Slot {
    MPI_Request request = MPI_REQUEST_NULL;
    int peer = -1;
    bool isRecv = false;
    std::size_t received = 0;
  };
  static constexpr std::size_t kInlineSlots = 16;

  MPI_Comm comm_;
  std::size_t capacity_;
  std::array<Slot, kInlineSlots> inline_;
  std::unique_ptr<Slot[]> heap_;
  Slot* slots_;
};

}  // namespace ringsync::detail
