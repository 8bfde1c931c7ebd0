#include "hierarchical_broadcast.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "chain_broadcast.h"
#include "node_hierarchy.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

void hierarchicalBroadcast(AlgorithmContext& context, const Call& args) {
  if (context.hierarchy == nullptr)
    throw InvalidArgument(
        "broadcast: the hierarchical algorithm needs ranks on several nodes with the same number "
        "of ranks on each");
  fingerprintRound(context);
  const std::size_t bytes = args.blockBytes();
  if (bytes == 0) return;
  NodeHierarchy& h = *context.hierarchy;
  const int rootLocal = h.localRankOf[static_cast<std::size_t>(args.root)];
  const bool carrier = h.localRank == rootLocal;  // this node's rank in the cross-node chain
  PeerNames names(context.deadline);
  if (carrier) {
    // The cross-node communicator of a local rank is ordered by rank in the parent communicator.
    int crossRoot = 0;
    for (int r = 0; r < args.root; ++r) crossRoot += h.localRankOf[static_cast<std::size_t>(r)] == rootLocal;
    const AlreadyChecked checked;
    AlgorithmContext cross{h.crossComm,  h.nodeIndex,    h.nodes,          *h.crossRounds, h.crossScratch,
                           context.ring, context.header, context.deadline, checked};
    names.use(h.crossGlobalRanks);
    Call crossCall = args;
    crossCall.root = crossRoot;
    chainBroadcast(cross, crossCall);
  }
  names.use(h.nodeGlobalRanks);
  RoundTransport& node = *h.nodeRounds;
  auto* data = static_cast<std::byte*>(args.recv);
  const std::size_t piece = node.maxPayloadBytes();
  for (std::size_t offset = 0; offset < bytes; offset += piece) {
    const std::size_t length = std::min(piece, bytes - offset);
    node.run(context.header, carrier ? data + offset : nullptr, carrier ? length : 0, context.deadline);
    node.requirePayloadBytes([&](int r) { return r == rootLocal ? length : std::size_t{0}; });
    if (!carrier) std::memcpy(data + offset, node.payload(rootLocal), length);
  }
}

}  // namespace ringsync::detail
