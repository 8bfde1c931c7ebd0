// Every host algorithm in one table: its id, the collective it runs, its name, its routine.
//
// An algorithm is one routine, `void name(AlgorithmContext&, const Call&)`, complete in its own
// file here, that includes only what it runs over (algorithm_context.h, call.h). To add one:
// write it, add its id below and its row in algorithm_table.cc, and teach the one selection
// function (src/algorithm_selection.cc) when to choose it (a collective it has no rule for runs
// its first row). Nothing else changes.
#pragma once

#include "algorithm_context.h"
#include "call.h"

namespace ringsync::detail {

enum class AlgorithmId {
  kDirectAllreduce,             // one round carries every rank's data; each rank reduces all (direct_allreduce.h)
  kSplitAllreduce,              // the round reduce-scatter, then the round all-gather (split_allreduce.h)
  kRingAllreduce,               // the ring's reduce-scatter and all-gather, pipelined as one (ring_pipeline.h)
  kHierarchicalAllreduce,       // split inside each node, ring across nodes (hierarchical_allreduce.h)
  kRecursiveDoublingAllreduce,  // node round, recursive doubling across nodes (recursive_doubling_allreduce.h)
  kRabenseifnerAllreduce,  // recursive halving + doubling across nodes, split inside them (rabenseifner_allreduce.h)
  kMpiAllreduce,           // MPI_Iallreduce, only when forced: a baseline (mpi_allreduce.h)
  kDirectReduceScatter,    // one round: every block to its owner, reduced there (round_reduce_scatter.h)
  kRingReduceScatter,      // the ring's reduce-scatter alone (ring_pipeline.h)
  kHierarchicalReduceScatter,      // node sums through shared memory, ring across nodes (hierarchical_blockwise.h)
  kRecursiveHalvingReduceScatter,  // log2(n) halving steps, through the nodes' leaders where nodes hold L >= 2
                                   // ranks (recursive_halving_blockwise.h)
  kDirectAllgather,                // one round: every block to every rank (round_allgather.h)
  kRingAllgather,                  // the ring's all-gather alone (ring_pipeline.h)
  kHierarchicalAllgather,          // ring across nodes, then shared memory inside them (hierarchical_blockwise.h)
  kRecursiveDoublingAllgather,     // log2(n) doubling steps, through the nodes' leaders where nodes hold L >= 2
                                   // ranks (recursive_halving_blockwise.h)
  kDirectBroadcast,                // the root's data in one round (direct_broadcast.h)
  kChainBroadcast,                 // pipelined chain from the root (chain_broadcast.h)
  kHierarchicalBroadcast,          // chain across nodes, shared-memory rounds inside them (hierarchical_broadcast.h)
  kRoundBarrier,                   // one round: hearing from every peer is the barrier (round_barrier.h)
};

using AlgorithmRoutine = void (*)(AlgorithmContext&, const Call&);

struct AlgorithmEntry {
  AlgorithmId id;
  CollectiveKind kind;
  const char* name;  // what Placement, RINGSYNC_LOG=info and the timeline report
  AlgorithmRoutine routine;
  bool takesScattered;  // reduces a ScatteredBuffer in place (others get it packed by the core)
};

const AlgorithmEntry& algorithmEntry(AlgorithmId id);
inline const char* algorithmName(AlgorithmId id) { return algorithmEntry(id).name; }

// The kind's first row: what the selection runs for a collective it has no rule for (barrier).
// InvalidArgument when the kind has no algorithm.
const AlgorithmEntry& firstAlgorithmOf(CollectiveKind kind);

// Runs algorithm `id` on `call`; InvalidArgument when it is not an algorithm of the call's
// collective, or the call is scattered and the algorithm does not take that.
void runAlgorithm(AlgorithmId id, AlgorithmContext& context, const Call& call);

}  // namespace ringsync::detail
