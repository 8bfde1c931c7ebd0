#include "overlap_policy.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

namespace ringsync::torch::detail {

double cpusOfThisRank(int ranksOnNode) {
  const long online = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  double usable = static_cast<double>(online);
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof mask, &mask) == 0) usable = CPU_COUNT(&mask);
  // Bound to a subset (--bind-to core), those CPUs are this rank's; unbound (or bound to a socket
  // other ranks share), the node's CPUs are shared by its ranks.
  return std::min(usable, static_cast<double>(online) / std::max(1, ranksOnNode));
}

bool overlapByDefault(const Communicator& comm, bool anyBucketOnDevice) {
  if (anyBucketOnDevice) return true;
  if (comm.localSize() < comm.size()) return true;
  return cpusOfThisRank(comm.localSize()) >= 2;
}

}  // namespace ringsync::torch::detail
