#include "algorithms.h"

#include <string>

#include "chain_broadcast.h"
#include "direct_allgather.h"
#include "direct_allreduce.h"
#include "direct_broadcast.h"
#include "hierarchical_allreduce.h"
#include "hierarchical_broadcast.h"
#include "mpi_allreduce.h"
#include "recursive_doubling_allreduce.h"
#include "ring_allreduce.h"
#include "ringsync/errors.h"
#include "round_barrier.h"
#include "split_allreduce.h"

namespace ringsync::detail {
namespace {
[[noreturn]] void notFor(const char* collective, AlgorithmId id) {
  throw InvalidArgument(std::string(collective) + ": algorithm " + algorithmName(id) + " (id " +
                        std::to_string(static_cast<int>(id)) + ") is not one of its algorithms");
}
}  // namespace

const char* algorithmName(AlgorithmId id) {
  switch (id) {
    case AlgorithmId::kDirectAllreduce: return "direct";
    case AlgorithmId::kSplitAllreduce: return "split";
    case AlgorithmId::kRingAllreduce: return "ring";
    case AlgorithmId::kHierarchicalAllreduce: return "hierarchical";
    case AlgorithmId::kRecursiveDoublingAllreduce: return "recursive_doubling";
    case AlgorithmId::kMpiAllreduce: return "mpi";
    case AlgorithmId::kDirectBroadcast: return "direct";
    case AlgorithmId::kChainBroadcast: return "chain";
    case AlgorithmId::kHierarchicalBroadcast: return "hierarchical";
    case AlgorithmId::kDirectAllgather: return "direct";
    case AlgorithmId::kRoundBarrier: return "direct";
  }
  return "invalid";
}

void runAllreduce(AlgorithmId id, AlgorithmContext& context, const AllreduceArgs& args) {
  if (args.scattered != nullptr && id != AlgorithmId::kSplitAllreduce)
    throw InvalidArgument(std::string("allreduce: the ") + algorithmName(id) +
                          " algorithm takes one contiguous buffer, not a scattered one");
  switch (id) {
    case AlgorithmId::kDirectAllreduce: return directAllreduce(context, args);
    case AlgorithmId::kSplitAllreduce: return splitAllreduce(context, args);
    case AlgorithmId::kRingAllreduce: return ringAllreduce(context, args);
    case AlgorithmId::kHierarchicalAllreduce: return hierarchicalAllreduce(context, args);
    case AlgorithmId::kRecursiveDoublingAllreduce: return recursiveDoublingAllreduce(context, args);
    case AlgorithmId::kMpiAllreduce: return mpiAllreduce(context, args);
    default: notFor("allreduce", id);
  }
}

void runBroadcast(AlgorithmId id, AlgorithmContext& context, const BroadcastArgs& args) {
  switch (id) {
    case AlgorithmId::kDirectBroadcast: return directBroadcast(context, args);
    case AlgorithmId::kChainBroadcast: return chainBroadcast(context, args);
    case AlgorithmId::kHierarchicalBroadcast: return hierarchicalBroadcast(context, args);
    default: notFor("broadcast", id);
  }
}

void runAllgather(AlgorithmId id, AlgorithmContext& context, const AllgatherArgs& args) {
  if (id != AlgorithmId::kDirectAllgather) notFor("allgather", id);
  directAllgather(context, args);
}

void runBarrier(AlgorithmId id, AlgorithmContext& context) {
  if (id != AlgorithmId::kRoundBarrier) notFor("barrier", id);
  roundBarrier(context);
}

}  // namespace ringsync::detail
