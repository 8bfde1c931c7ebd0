#include "algorithm_table.h"

#include <iterator>
#include <string>

#include "chain_broadcast.h"
#include "direct_allreduce.h"
#include "direct_broadcast.h"
#include "hierarchical_allreduce.h"
#include "hierarchical_blockwise.h"
#include "hierarchical_broadcast.h"
#include "mpi_allreduce.h"
#include "rabenseifner_allreduce.h"
#include "recursive_doubling_allreduce.h"
#include "recursive_halving_blockwise.h"
#include "ring_pipeline.h"
#include "ringsync/errors.h"
#include "round_allgather.h"
#include "round_barrier.h"
#include "round_reduce_scatter.h"
#include "split_allreduce.h"

namespace ringsync::detail {
namespace {

using K = CollectiveKind;
using A = AlgorithmId;

// In AlgorithmId order (checked below).
constexpr AlgorithmEntry kTable[] = {
    {A::kDirectAllreduce, K::kAllreduce, "direct", directAllreduce, false},
    {A::kSplitAllreduce, K::kAllreduce, "split", splitAllreduce, true},
    {A::kRingAllreduce, K::kAllreduce, "ring", ringCollective, false},
    {A::kHierarchicalAllreduce, K::kAllreduce, "hierarchical", hierarchicalAllreduce, false},
    {A::kRecursiveDoublingAllreduce, K::kAllreduce, "recursive_doubling", recursiveDoublingAllreduce, false},
    {A::kRabenseifnerAllreduce, K::kAllreduce, "rabenseifner", rabenseifnerAllreduce, false},
    {A::kMpiAllreduce, K::kAllreduce, "mpi", mpiAllreduce, false},
    {A::kDirectReduceScatter, K::kReduceScatter, "direct", roundReduceScatter, false},
    {A::kRingReduceScatter, K::kReduceScatter, "ring", ringCollective, false},
    {A::kHierarchicalReduceScatter, K::kReduceScatter, "hierarchical", hierarchicalReduceScatter, false},
    {A::kRecursiveHalvingReduceScatter, K::kReduceScatter, "recursive_halving", recursiveHalvingReduceScatter, false},
    {A::kDirectAllgather, K::kAllgather, "direct", roundAllgather, false},
    {A::kRingAllgather, K::kAllgather, "ring", ringCollective, false},
    {A::kHierarchicalAllgather, K::kAllgather, "hierarchical", hierarchicalAllgather, false},
    {A::kRecursiveDoublingAllgather, K::kAllgather, "recursive_doubling", recursiveDoublingAllgather, false},
    {A::kDirectBroadcast, K::kBroadcast, "direct", directBroadcast, false},
    {A::kChainBroadcast, K::kBroadcast, "chain", chainBroadcast, false},
    {A::kHierarchicalBroadcast, K::kBroadcast, "hierarchical", hierarchicalBroadcast, false},
    {A::kRoundBarrier, K::kBarrier, "direct", roundBarrier, false},
};

constexpr bool inIdOrder() {
  for (std::size_t i = 0; i < std::size(kTable); ++i)
    if (static_cast<std::size_t>(kTable[i].id) != i) return false;
  return true;
}
static_assert(inIdOrder(), "kTable's rows must follow AlgorithmId's order");

}  // namespace

const AlgorithmEntry& algorithmEntry(AlgorithmId id) {
  const auto index = static_cast<std::size_t>(id);
  if (index >= std::size(kTable))
    throw InvalidArgument("algorithm id " + std::to_string(index) + " is not in the algorithm table");
  return kTable[index];
}

const AlgorithmEntry& firstAlgorithmOf(CollectiveKind kind) {
  for (const AlgorithmEntry& row : kTable)
    if (row.kind == kind) return row;
  throw InvalidArgument(std::string(collectiveName(kind)) + " has no algorithm in the algorithm table");
}

void runAlgorithm(AlgorithmId id, AlgorithmContext& context, const Call& call) {
  const AlgorithmEntry& entry = algorithmEntry(id);
  if (entry.kind != call.kind)
    throw InvalidArgument(std::string(collectiveName(call.kind)) + ": algorithm " + entry.name +
                          " is an algorithm of " + collectiveName(entry.kind));
  if (call.scattered != nullptr && !entry.takesScattered)
    throw InvalidArgument(std::string(collectiveName(call.kind)) + ": the " + entry.name +
                          " algorithm takes one contiguous buffer, not a scattered one");
  entry.routine(context, call);
}

}  // namespace ringsync::detail
