// Waiting for MPI's own non-blocking calls (the collectives ringsync hands to MPI, point-to-point
// messages) under ringsync's deadline: MPI_Test polled with ringsync's idle policy, never a
// blocking MPI call that a silent peer could hold forever.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include <mpi.h>

#include "ringsync/options.h"

namespace ringsync::torch_backend {

// BackendError "<what> failed: <MPI's message>" unless code is MPI_SUCCESS.
void checkMpi(int code, const char* what);
std::string mpiErrorText(int code);

// How a waiting thread spends its time: polls for ~20 us, then yields the core at every poll,
// then (after ~1 ms without progress) sleeps 50 us between polls; spinWait: polls only (as
// ringsync's own waits, Options::spinWait).
class IdleWait {
 public:
  explicit IdleWait(bool spin) : spin_(spin) {}
  void pause();       // between two polls that found nothing
  void progressed();  // back to polling
 private:
  bool spin_;
  int polls_ = 0;
  std::chrono::steady_clock::time_point idleSince_{};
};

// One call's deadline (Options::timeoutSeconds from construction; 0: none).
class MpiDeadline {
 public:
  MpiDeadline(const Options& options, std::string call);

  // Polls `request` until it completes (request is MPI_REQUEST_NULL then). At the deadline:
  // TimeoutError "<call> timed out after S s waiting for <waitingFor()>"; the request is left
  // active (the caller decides what the memory it writes needs).
  void wait(MPI_Request& request, const std::function<std::string()>& waitingFor, MPI_Status* status = nullptr);
  [[noreturn]] void timedOut(const std::string& waitingFor) const;
  bool expired() const;
  const std::string& call() const { return call_; }

 private:
  std::string call_;
  double seconds_;
  std::chrono::steady_clock::time_point end_;
  IdleWait idle_;
};

// MPI counts are ints: `bytes` as a count of a datatype, MPI_BYTE up to INT_MAX bytes, a derived
// type above (committed here, freed by the destructor). Equal byte counts give equal type
// signatures on every rank.
class ByteCount {
 public:
  explicit ByteCount(std::size_t bytes);
  ~ByteCount();
  ByteCount(const ByteCount&) = delete;
  ByteCount& operator=(const ByteCount&) = delete;
  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

 private:
  int count_ = 0;
  MPI_Datatype type_ = MPI_BYTE;
  bool derived_ = false;
};

}  // namespace ringsync::torch_backend
