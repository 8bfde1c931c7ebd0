// Every host algorithm, one routine each, and the dispatch from an AlgorithmId to it.
//
// To add an algorithm: write it in its own file here with the signature of its collective
// (`void name(AlgorithmContext&, const AllreduceArgs&)` for an all-reduce), add its id below and
// its case in algorithms.cc, and teach the one selection function (src/algorithm_selection.cc)
// when to choose it. Nothing else changes.
#pragma once

#include <cstddef>

#include "algorithm_context.h"
#include "ringsync/types.h"

namespace ringsync::detail {

class ScatteredBuffer;

struct AllreduceArgs {
  const void* send;  // send == recv: in place
  void* recv;
  std::size_t count;
  DataType type;
  ReduceOp op;
  // Set instead of send/recv: in place over these spans (scattered_buffer.h). Only the split
  // all-reduce takes it; the core packs the spans for any other algorithm.
  const ScatteredBuffer* scattered = nullptr;
};

struct BroadcastArgs {
  void* buf;
  std::size_t bytes;
  int root;
};

struct AllgatherArgs {
  const void* send;  // may be this rank's block of recv (in place)
  void* recv;        // size · bytesPerRank
  std::size_t bytesPerRank;
};

enum class AlgorithmId {
  kDirectAllreduce,  // one round carries every rank's data; each rank reduces all (direct_allreduce.h)
  kSplitAllreduce,   // reduce-scatter + all-gather through two shared-memory rounds (split_allreduce.h)
  kRingAllreduce,    // segmented, pipelined ring over point-to-point (ring_allreduce.h)
  kHierarchicalAllreduce,  // split inside each node, ring across nodes (hierarchical_allreduce.h)
  kRecursiveDoublingAllreduce,  // node round, recursive doubling across nodes (recursive_doubling_allreduce.h)
  kMpiAllreduce,     // MPI_Iallreduce, only when forced: a baseline (mpi_allreduce.h)
  kDirectBroadcast,  // the root's data in one round (direct_broadcast.h)
  kChainBroadcast,   // pipelined chain from the root (chain_broadcast.h)
  kHierarchicalBroadcast,  // chain across nodes, shared-memory rounds inside them (hierarchical_broadcast.h)
  kDirectAllgather,  // every block to every peer (direct_allgather.h)
  kRoundBarrier,     // one round: hearing from every peer is the barrier (round_barrier.h)
};

// "direct", "split", "ring", "hierarchical", "recursive_doubling", "mpi", "chain" (what Placement and RINGSYNC_LOG=info report).
const char* algorithmName(AlgorithmId id);

// Runs algorithm `id`; InvalidArgument when it is not an algorithm of that collective.
void runAllreduce(AlgorithmId id, AlgorithmContext& context, const AllreduceArgs& args);
void runBroadcast(AlgorithmId id, AlgorithmContext& context, const BroadcastArgs& args);
void runAllgather(AlgorithmId id, AlgorithmContext& context, const AllgatherArgs& args);
void runBarrier(AlgorithmId id, AlgorithmContext& context);

}  // namespace ringsync::detail
