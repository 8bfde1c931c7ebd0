#include "node_hierarchy.h"

#include "mpi_check.h"

namespace ringsync::detail {

namespace {

// Node rounds smaller than this make pieces too small for the hierarchical all-reduce.
constexpr std::size_t kSmallestNodeRoundBytes = 64 * 1024;

// Each node made its rounds alone, through its own /dev/shm: one may have fallen back to
// point-to-point, or to smaller slots. The algorithm and the hierarchical pieces depend on them
// (algorithm_selection.h, hierarchical_allreduce.cc), so every rank of the whole communicator
// takes the same: the smallest node round of all, when every node shares memory and that round
// holds kSmallestNodeRoundBytes; otherwise no hierarchy anywhere (false on every rank).
bool agreeOnNodeRounds(MPI_Comm comm, RoundTransport& nodeRounds) {
  unsigned long long smallest = nodeRounds.sharedMemory() ? nodeRounds.maxPayloadBytes() : 0;
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &smallest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm));
  if (smallest < kSmallestNodeRoundBytes) return false;
  nodeRounds.limitPayloadBytes(static_cast<std::size_t>(smallest));
  return true;
}

}  // namespace

const char* hierarchyBlockerText(HierarchyBlocker blocker) {
  switch (blocker) {
    case HierarchyBlocker::kNone: return "available";
    case HierarchyBlocker::kOneNode: return "all ranks on one node";
    case HierarchyBlocker::kOneRankPerNode: return "one rank per node";
    case HierarchyBlocker::kUnevenNodes: return "nodes hold different numbers of ranks";
    case HierarchyBlocker::kSmallNodeRounds:
      return "node rounds too small (too many ranks per node, or a node whose /dev/shm cannot hold them)";
  }
  return "unknown";
}

std::unique_ptr<NodeHierarchy> NodeHierarchy::build(MPI_Comm comm, MPI_Comm node, const RoundCapacity& nodeCapacity,
                                                    const RingConfig& ring, HierarchyBlocker* blocker) {
  int rank = 0, size = 1, localRank = 0, localSize = 1;
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(comm, &size));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(node, &localRank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(node, &localSize));
  // Every rank must decide alike: the smallest and largest node sizes, from one reduction.
  int sizes[2] = {-localSize, localSize};
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, comm));
  const int smallest = -sizes[0], largest = sizes[1];
  *blocker = HierarchyBlocker::kNone;
  if (largest == size) *blocker = HierarchyBlocker::kOneNode;
  else if (largest == 1) *blocker = HierarchyBlocker::kOneRankPerNode;
  else if (smallest != largest) *blocker = HierarchyBlocker::kUnevenNodes;
  // Split's first round carries (L-1)/L of a piece; below 64 KiB per round the pieces would be
  // too small to be worth it (and 0 would never finish).
  else if (nodeCapacity.sharedMemoryBytes < kSmallestNodeRoundBytes) *blocker = HierarchyBlocker::kSmallNodeRounds;
  std::unique_ptr<RoundTransport> nodeRounds;
  if (*blocker == HierarchyBlocker::kNone) {
    nodeRounds = std::make_unique<RoundTransport>(node, localRank, localSize, nodeCapacity);
    if (!agreeOnNodeRounds(comm, *nodeRounds)) *blocker = HierarchyBlocker::kSmallNodeRounds;
  }
  if (*blocker != HierarchyBlocker::kNone) {
    nodeRounds.reset();
    RINGSYNC_CHECK_MPI(MPI_Comm_free(&node));
    return nullptr;
  }
  std::unique_ptr<NodeHierarchy> h(new NodeHierarchy());
  h->nodeComm = node;
  h->localRank = localRank;
  h->localSize = localSize;
  // Ordered by global rank: each cross-node ring is independent, so the node order may differ
  // between local ranks without harm.
  RINGSYNC_CHECK_MPI(MPI_Comm_split(comm, localRank, rank, &h->crossComm));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(h->crossComm, &h->nodeIndex));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(h->crossComm, &h->nodes));
  h->crossGlobalRanks.resize(static_cast<std::size_t>(h->nodes));
  RINGSYNC_CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, h->crossGlobalRanks.data(), 1, MPI_INT, h->crossComm));
  h->nodeGlobalRanks.resize(static_cast<std::size_t>(localSize));
  RINGSYNC_CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, h->nodeGlobalRanks.data(), 1, MPI_INT, node));
  h->localRankOf.resize(static_cast<std::size_t>(size));
  RINGSYNC_CHECK_MPI(MPI_Allgather(&localRank, 1, MPI_INT, h->localRankOf.data(), 1, MPI_INT, comm));
  int leaderIndex = h->nodeIndex;  // local rank 0's, told to the node, then to every rank
  RINGSYNC_CHECK_MPI(MPI_Bcast(&leaderIndex, 1, MPI_INT, 0, node));
  h->leaderIndexOf.resize(static_cast<std::size_t>(size));
  RINGSYNC_CHECK_MPI(MPI_Allgather(&leaderIndex, 1, MPI_INT, h->leaderIndexOf.data(), 1, MPI_INT, comm));
  h->nodeRounds = std::move(nodeRounds);
  h->crossRounds = std::make_unique<RoundTransport>(h->crossComm, h->nodeIndex, h->nodes, RoundCapacity{});
  h->crossScratch.reserve(static_cast<std::size_t>(ring.depth) * ring.segmentBytes);
  return h;
}

NodeHierarchy::~NodeHierarchy() {
  nodeRounds.reset();
  crossRounds.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (nodeComm != MPI_COMM_NULL) MPI_Comm_free(&nodeComm);
  if (crossComm != MPI_COMM_NULL) MPI_Comm_free(&crossComm);
}

void NodeHierarchy::abandon() {
  (void)nodeRounds.release();
  (void)crossRounds.release();
  nodeScratch.abandon();
  crossScratch.abandon();
  nodeComm = crossComm = MPI_COMM_NULL;
}

}  // namespace ringsync::detail
