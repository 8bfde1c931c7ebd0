// Shared by the message exchanges that cut a message into parts (recursive_doubling.cc,
// summary_messages.cc): once the first part of a message is taken its other parts must be taken
// too (they carry no header; one left behind would be read as a later call's part), so the
// deadline's watcher (a peer that took another algorithm ends a wait by throwing) rests meanwhile;
// only the deadline (the communicator is aborted then) or an MPI error can end such a wait early.
#pragma once

#include <exception>

#include "idle_wait.h"

namespace ringsync::detail {

class WatchPaused {
 public:
  explicit WatchPaused(Deadline& deadline) : deadline_(deadline), watcher_(deadline.watcher()) {
    deadline_.watchWhileIdle(nullptr);
  }
  ~WatchPaused() { deadline_.watchWhileIdle(watcher_); }
  WatchPaused(const WatchPaused&) = delete;
  WatchPaused& operator=(const WatchPaused&) = delete;

 private:
  Deadline& deadline_;
  IdleWatcher* watcher_;
};

// Inside a handler: whether the exception in flight is a std::exception (every ringsync error is;
// the watcher's signal that a peer took another algorithm, PeerTookAnotherAlgorithm, is not).
inline bool handlingStdException() {
  try {
    throw;
  } catch (const std::exception&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace ringsync::detail
