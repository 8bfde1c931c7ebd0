#include "overlap_policy.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace ringsync::detail {

double cpusPerRank(int cpusInMask, int onlineCpus, int ranksOnNode) {
  // Bound to a subset (--bind-to core), those CPUs are this rank's; unbound (or bound to a socket
  // other ranks share), the node's CPUs are shared by its ranks.
  return std::min(static_cast<double>(cpusInMask), static_cast<double>(onlineCpus) / std::max(1, ranksOnNode));
}

double cpusOfThisRank(int ranksOnNode) {
  const int online = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  int inMask = online;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) inMask = CPU_COUNT(&mask);
  return cpusPerRank(inMask, online, ranksOnNode);
}

bool overlapGains(const Communicator& comm, bool anyBucketOnDevice) {
  if (anyBucketOnDevice) return true;
  if (comm.localSize() < comm.size()) return true;
  return cpusOfThisRank(comm.localSize()) >= 2;
}

}  // namespace ringsync::detail
