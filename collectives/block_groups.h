// Which blocks of an n-block array (one block per rank: a reduce-scatter's input, an all-gather's
// output) each local rank carries across nodes in the hierarchical reduce-scatter and all-gather:
// local rank m carries the blocks of the ranks with local rank m, one per node, in the order of
// local rank m's cross-node communicator (parent rank order, node_hierarchy.h). Every rank of the
// communicator computes the same groups from NodeHierarchy::localRankOf.
#pragma once

#include <cstddef>
#include <vector>

#include "node_hierarchy.h"

namespace ringsync::detail {

class BlockGroups {
 public:
  explicit BlockGroups(const NodeHierarchy& h) : nodes_(h.nodes), blocks_(h.localRankOf.size()) {
    std::vector<int> filled(static_cast<std::size_t>(h.localSize), 0);
    for (std::size_t g = 0; g < h.localRankOf.size(); ++g) {
      const int m = h.localRankOf[g];
      blocks_[static_cast<std::size_t>(m * nodes_ + filled[static_cast<std::size_t>(m)]++)] = static_cast<int>(g);
    }
  }
  // The block (= its owner's rank) that is member j of local rank m's group.
  int block(int m, int j) const { return blocks_[static_cast<std::size_t>(m * nodes_ + j)]; }

 private:
  int nodes_;
  std::vector<int> blocks_;  // local rank m's group at [m·nodes, (m+1)·nodes)
};

}  // namespace ringsync::detail
