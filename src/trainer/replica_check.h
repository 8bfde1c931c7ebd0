// Replicas must stay bit-identical (same start, same averaged gradient, same update). The check
// hashes each rank's parameters and compares the hashes over the ranks, so a divergence (a bug,
// a bad node, non-deterministic arithmetic) stops training with the ranks named instead of
// silently training n different models.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringsync/communicator.h"

namespace ringsync::trainer {

// FNV-1a (64-bit) of the bytes of `count` floats.
std::uint64_t parameterChecksum(const float* parameters, std::size_t count);

// Collective: compares every rank's checksum with rank 0's. Raises ReplicaMismatch on every rank,
// naming the ranks that differ from rank 0 and `step`, when any does.
void checkReplicas(Communicator& comm, std::uint64_t localChecksum, std::size_t step);

}  // namespace ringsync::trainer
