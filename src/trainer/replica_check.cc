#include "replica_check.h"

#include <cstring>
#include <sstream>
#include <vector>

#include "errors.h"

namespace ringsync::trainer {

std::uint64_t parameterChecksum(const float* parameters, std::size_t count) {
  std::uint64_t hash = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(parameters);
  for (std::size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

void checkReplicas(Communicator& comm, std::uint64_t localChecksum, std::size_t step) {
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  comm.allgather(&localChecksum, all.data(), 1, DataType::kUInt64);
  std::ostringstream differing;
  std::size_t count = 0;
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    differing << (count++ ? ", " : "") << r << " (0x" << std::hex << all[r] << std::dec << ")";
  }
  if (count == 0) return;
  std::ostringstream message;
  message << "replica check after step " << step << ": the parameters of rank" << (count == 1 ? " " : "s ")
          << differing.str() << " differ from rank 0's (0x" << std::hex << all[0] << ")";
  throw ReplicaMismatch(message.str());
}

}  // namespace ringsync::trainer
