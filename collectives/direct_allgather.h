// All-gather by direct exchange: every rank sends its block to every peer and receives each
// peer's block straight into place. n-1 messages each way; fine for the sizes ringsync gathers
// (fingerprints, checksums, small metadata), not meant for bulk data.
#pragma once

#include "algorithms.h"

namespace ringsync::detail {

void directAllgather(AlgorithmContext& context, const AllgatherArgs& args);

}  // namespace ringsync::detail
