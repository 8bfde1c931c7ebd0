// The two communicators the hierarchical all-reduce runs over, found once when a Communicator is
// built: the ranks of this node (rounds through shared memory) and, across nodes, the ranks that
// have the same node-local rank (a ring over MPI point-to-point). Any rank numbering works: a
// rank's place is its node-local rank and the index of its node, never its global rank.
#pragma once

#include <memory>
#include <vector>

#include <mpi.h>

#include "ring_config.h"
#include "round_transport.h"
#include "scratch_buffer.h"

namespace ringsync::detail {

// Why a layout gets no hierarchy (every rank reaches the same value: it comes from collective
// reductions over the whole communicator).
enum class HierarchyBlocker {
  kNone,             // built
  kOneNode,          // every rank on one node: split/direct already use shared memory
  kOneRankPerNode,   // nothing to reduce inside a node
  kUnevenNodes,      // nodes hold different numbers of ranks
  kSmallNodeRounds,  // node rounds too small to carry data: too many ranks per node, or a node whose
                     // /dev/shm cannot hold them (each node's is agreed over the whole communicator)
};
const char* hierarchyBlockerText(HierarchyBlocker blocker);

class NodeHierarchy {
 public:
  // Collective over `comm`. `node` is this rank's node communicator (MPI_COMM_TYPE_SHARED); the
  // hierarchy takes it over when it is built, else frees it. `nodeCapacity`: what a node round
  // may carry (the caller's policy, roundCapacity at the node's size; each node gets what its
  // /dev/shm holds, and every node then takes the smallest, so that all ranks choose alike). Null,
  // with *blocker set, when the layout or a node's shared memory does not allow the hierarchical
  // algorithm.
  static std::unique_ptr<NodeHierarchy> build(MPI_Comm comm, MPI_Comm node, const RoundCapacity& nodeCapacity,
                                              const RingConfig& ring, HierarchyBlocker* blocker);
  ~NodeHierarchy();
  NodeHierarchy(const NodeHierarchy&) = delete;
  NodeHierarchy& operator=(const NodeHierarchy&) = delete;

  // After a failed call messages may still be in flight into this memory, and MPI may be gone at
  // exit: keep the communicators and the buffers (never freed), as the core does with its own.
  void abandon();

  MPI_Comm nodeComm = MPI_COMM_NULL;
  int localRank = 0, localSize = 1;
  std::unique_ptr<RoundTransport> nodeRounds;  // shared memory
  ScratchBuffer nodeScratch;                   // unused by the node's rounds; an AlgorithmContext needs one

  MPI_Comm crossComm = MPI_COMM_NULL;  // the ranks with this local rank, one per node
  int nodeIndex = 0, nodes = 1;
  std::unique_ptr<RoundTransport> crossRounds;  // fingerprints only (the ring moves the data)
  ScratchBuffer crossScratch;                   // the cross-node ring's segments
  std::vector<int> crossGlobalRanks;            // crossComm rank -> rank in the parent communicator
  std::vector<int> nodeGlobalRanks;             // nodeComm rank -> rank in the parent communicator
  std::vector<int> localRankOf;                 // rank in the parent communicator -> its local rank
  std::vector<int> leaderIndexOf;               // rank in the parent communicator -> its node's index among the
                                                // leaders (local rank 0's crossComm rank)

 private:
  NodeHierarchy() = default;
};

}  // namespace ringsync::detail
