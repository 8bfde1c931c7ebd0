// A shared-memory segment mapped by every rank of a communicator whose ranks all run on this node,
// one region per rank. The header exchange uses it so that a call's fingerprint (and a small
// payload) is published with a store and read in place by the peers: no message matching, no
// copy into MPI's fragments, one cache-line transfer of latency (shared_slots.cc says why not an
// MPI shared window).
//
// The segment lives in /dev/shm (POSIX shm_open), whose size is often small: a container's is 64 MB
// unless configured otherwise. Its memory is reserved when the segment is created (posix_fallocate),
// so a shortage is an error at creation, never a SIGBUS on first touch: the caller offers several
// region sizes, largest first, and gets the largest that /dev/shm can hold, or none (then its
// rounds go through MPI point-to-point).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

namespace ringsync::detail {

class SharedSlots {
 public:
  // Collective over `comm`. `regionBytes`: the bytes per rank the caller can use, largest first
  // (the same list on every rank). Returns null on every rank unless all of comm's ranks share
  // this node and every rank mapped the segment; otherwise every rank's region has
  // regionBytes[choice()] bytes (rank 0 chose, so every rank has the same).
  static std::unique_ptr<SharedSlots> create(MPI_Comm comm, const std::vector<std::size_t>& regionBytes);
  ~SharedSlots();  // unmaps this rank's view; never throws, no MPI call

  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;

  std::byte* region(int rank) { return base_ + static_cast<std::size_t>(rank) * bytesPerRank_; }
  const std::byte* region(int rank) const { return base_ + static_cast<std::size_t>(rank) * bytesPerRank_; }
  // Which of the offered region sizes the segment has.
  std::size_t choice() const { return choice_; }
  // More ranks on this node than CPUs this process may run on: waiting must give the CPU away.
  bool oversubscribed() const { return oversubscribed_; }

  // The first time in this process that /dev/shm could not hold the largest size offered (a
  // smaller one was taken, or none), what happened, naming /dev/shm and its free space, for the
  // RINGSYNC_LOG=info line; "" otherwise and on every later call (it is said once per process).
  static std::string takeShortageNotice();

 private:
  SharedSlots(std::byte* base, std::size_t bytes, std::size_t bytesPerRank, std::size_t choice, bool oversubscribed)
      : base_(base), bytes_(bytes), bytesPerRank_(bytesPerRank), choice_(choice), oversubscribed_(oversubscribed) {}

  std::byte* base_;
  std::size_t bytes_;
  std::size_t bytesPerRank_;
  std::size_t choice_;
  bool oversubscribed_;
};

}  // namespace ringsync::detail
