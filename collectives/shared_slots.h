// A shared-memory segment mapped by every rank of a communicator whose ranks all run on this node,
// one region per rank. The header exchange uses it so that a call's fingerprint (and a small
// payload) is published with a store and read in place by the peers: no message matching, no
// copy into MPI's fragments, one cache-line transfer of latency (shared_slots.cc says why not an
// MPI shared window).
#pragma once

#include <cstddef>
#include <memory>

#include <mpi.h>

namespace ringsync::detail {

class SharedSlots {
 public:
  // Collective over `comm`. Returns null on every rank unless all of comm's ranks share this node
  // and every rank mapped the segment; the caller then uses MPI point-to-point instead.
  static std::unique_ptr<SharedSlots> create(MPI_Comm comm, std::size_t bytesPerRank);
  ~SharedSlots();  // unmaps this rank's view; never throws, no MPI call

  SharedSlots(const SharedSlots&) = delete;
  SharedSlots& operator=(const SharedSlots&) = delete;

  std::byte* region(int rank) { return base_ + static_cast<std::size_t>(rank) * bytesPerRank_; }
  const std::byte* region(int rank) const { return base_ + static_cast<std::size_t>(rank) * bytesPerRank_; }
  // More ranks on this node than CPUs this process may run on: waiting must give the CPU away.
  bool oversubscribed() const { return oversubscribed_; }

 private:
  SharedSlots(std::byte* base, std::size_t bytes, std::size_t bytesPerRank, bool oversubscribed)
      : base_(base), bytes_(bytes), bytesPerRank_(bytesPerRank), oversubscribed_(oversubscribed) {}

  std::byte* base_;
  std::size_t bytes_;
  std::size_t bytesPerRank_;
  bool oversubscribed_;
};

}  // namespace ringsync::detail
