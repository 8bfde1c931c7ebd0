// The node's leader (local rank 0) crosses the network alone and hands the result to the other
// ranks of its node, for small messages (the recursive-doubling all-reduce, the butterfly's halves;
// as Open MPI's HAN does): after the call's first node round, the leaders exchange among the nodes,
// then a second node round in which the leader publishes [call summary | result] and the others
// nothing. One rank per node on the network, one message per node and step.
//
// A call the ranks disagree about still ends in the same verdict on every rank, with no round of
// its own: the algorithms that start with a node round and have every local rank cross the network
// (the hierarchical Rabenseifner, the sharded doubling) may meet this one in a mismatched call, and
// their local ranks m wait for a message from local rank m of every node. So a rank that is not
// its node's leader, once it knows the ranks disagree, exchanges the summaries with the ranks of
// its local rank (crossWithVerdict: recursive doubling's messages, prefixes only), and a node whose
// own first round disagrees has no second round at all: every local rank could be in another
// algorithm. roundsOpen: the node rounds this rank has begun that a node peer may not have read,
// taken back (RoundTransport::withdrawSharedRound) when a peer took another algorithm.
#pragma once

#include <cstddef>

#include "algorithm_context.h"
#include "call_summary.h"
#include "node_hierarchy.h"

namespace ringsync::detail {

struct LeaderResult {
  CallSummary summary;
  const std::byte* data = nullptr;  // `bytes` of result where the summary agrees
};

// The leader's outgoing buffer: the result goes at the returned address (`bytes` of it), followed
// by `workBytes` the leader may use meanwhile. The communicator's cross-node scratch: none of
// these algorithms runs a ring across the nodes.
std::byte* leaderResultSpace(NodeHierarchy& h, std::size_t bytes, std::size_t workBytes = 0);

// The leader, after its exchange among the leaders (`summary`: every node's calls): publishes the
// summary and (where it agrees) the `bytes` of result already written at leaderResultSpace,
// unless its node's first round disagreed (`nodeAgreed` false: no second round).
LeaderResult handResultToNode(AlgorithmContext& context, const CallSummary& summary, bool nodeAgreed,
                              std::size_t bytes);

// The others: the leader's summary and result (`bytes` of it, checked where the summary agrees);
// where the node's round or the leader's verdict disagrees, the summary exchange across instead.
LeaderResult resultFromLeader(AlgorithmContext& context, const CallSummary& nodeSummary, std::size_t bytes,
                              int* roundsOpen);

}  // namespace ringsync::detail
