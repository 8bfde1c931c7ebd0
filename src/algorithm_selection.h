// The one place that decides which host algorithm a collective takes. Every input is here: the
// collective, its bytes, the ranks and how they sit on nodes, how rounds travel, and the options.
// Every rank reaches the same answer for the same call (the inputs are the call's own fields,
// settings agreed at construction, and constants), so ranks never disagree about the algorithm.
//
// To add an algorithm: collectives/algorithm_table.h, and a rule here.
#pragma once

#include <cstddef>

#include "collectives/algorithm_table.h"
#include "collectives/call_header.h"
#include "collectives/node_hierarchy.h"
#include "collectives/round_transport.h"
#include "ringsync/options.h"

namespace ringsync::detail {

struct SelectionInputs {
  CollectiveKind kind;
  std::size_t count;  // elements, as the call counts them (a block for reduce-scatter and all-gather)
  std::size_t elementBytes;
  int size;                       // ranks
  bool sharedMemoryRounds;        // every rank on this node: rounds go through shared memory
  std::size_t roundPayloadBytes;  // the most a round may carry per rank (RoundTransport::maxPayloadBytes)
  const Options& options;
  // Whether the node layout allows the hierarchical all-reduce, and if not why (decided once, at
  // construction, the same on every rank).
  HierarchyBlocker hierarchy = HierarchyBlocker::kOneNode;
  // What the node's shared-memory round may carry per rank, when there is a hierarchy (recursive
  // doubling across nodes sends the whole message through it); 0 otherwise.
  std::size_t nodeRoundPayloadBytes = 0;
  // How many take part in recursive doubling across nodes: the nodes when there is a hierarchy,
  // every rank when the nodes hold one rank each or different numbers; 0 on one node.
  int doublingMembers = 0;
};

struct Selection {
  AlgorithmId algorithm;
  const char* reason;  // why (RINGSYNC_LOG=info prints it after the algorithm)
};

Selection chooseAlgorithm(const SelectionInputs& inputs);

// What a round may carry per rank, by how it travels: the direct exchange reads (n-1) payloads
// per rank, so past kDirectRoundBytes in total the ring moves less; with more than
// kDirectMaxRanks ranks rounds carry fingerprints only. Decided once, at construction.
RoundCapacity roundCapacity(int size, const Options& options);

}  // namespace ringsync::detail
