// What every host algorithm runs over, and the first round every one of them starts with.
//
// An algorithm is one routine, `void name(AlgorithmContext&, const Call&)`, complete in its own
// file (collectives/algorithm_table.h lists them). The context holds the ranks, the round
// transport, the ring's settings and scratch, this call's fingerprint and deadline, and the
// caller's check. Every algorithm sends this call's fingerprint in its first round and calls
// firstRoundDone() when that round has completed, before it uses any peer's data: that is where
// the caller's check runs, the same way for every algorithm.
#pragma once

#include <cstddef>

#include <mpi.h>

#include "call_header.h"
#include "call_summary.h"
#include "ring_config.h"
#include "round_transport.h"
#include "scratch_buffer.h"
#include "transport.h"

namespace ringsync::detail {

// The caller's verification of a call's first round (implemented by the Communicator core).
class CallCheck {
 public:
  // Raises MismatchError / NonFiniteError, identically on every rank (every rank holds every
  // header), before any peer's data is used.
  virtual void afterFirstRound(const RoundTransport& round) const = 0;
  // The same verdict from a summary of every rank's call (algorithms without a first round that
  // reaches every rank, call_summary.h); every rank holds the same summary.
  virtual void afterSummary(const CallSummary& summary) const = 0;
  // Whether an algorithm that needs no round for its data exchanges fingerprints anyway.
  virtual bool wantsRound() const = 0;

 protected:
  ~CallCheck() = default;
};

// For the phases of an algorithm that checked the call on the whole communicator first: they
// exchange no fingerprints of their own and have nothing left to raise.
class AlreadyChecked final : public CallCheck {
 public:
  void afterFirstRound(const RoundTransport&) const override {}
  void afterSummary(const CallSummary&) const override {}
  bool wantsRound() const override { return false; }
};

class NodeHierarchy;
struct DoublingBuffers;

struct AlgorithmContext {
  MPI_Comm comm;
  int rank;
  int size;
  RoundTransport& rounds;
  ScratchBuffer& ringScratch;  // the ring's slots (ring_config.h's ringScratchBytes), kept for the communicator's life
  RingConfig ring;
  CallHeader header;  // this call's fingerprint, sent in its first round
  Deadline& deadline;
  const CallCheck& check;
  // The node and cross-node communicators, when the layout allows the hierarchical all-reduce
  // (node_hierarchy.h); null otherwise. Only that algorithm reads it.
  NodeHierarchy* hierarchy = nullptr;
  // What recursive doubling sends from and receives into (recursive_doubling.h), kept for the
  // communicator's life; null in contexts that run no recursive doubling.
  DoublingBuffers* doublingBuffers = nullptr;
  // The ring of a communicator of two ranks on two nodes: a chunk of
  // kAcrossTwoRanksWholeChunkFromBytes..UpToBytes goes as one message (ring_config.h).
  // The same on every rank for a given call; false for broadcasts and in the contexts made inside
  // an algorithm.
  bool wholeChunksBetweenTwoNodes = false;
  // The partial sums of the ring's reduce-scatter alone (two chunks, ring_pipeline.cc), kept for the
  // communicator's life; null in contexts that run no ring reduce-scatter.
  ScratchBuffer* ringPartials = nullptr;
  // Working memory an algorithm keeps between its phases (the hierarchical reduce-scatter's node
  // sums, the all-gather's gathered groups), kept for the communicator's life; null in contexts
  // made inside an algorithm.
  ScratchBuffer* pieceScratch = nullptr;
  // The network's latency in bytes (Options::networkLatencyBytes): what the flat Rabenseifner
  // all-reduce sizes its pieces by (rabenseifner_allreduce.cc); 0 in contexts made inside an
  // algorithm.
  std::size_t networkLatencyBytes = 0;
};

// After the first round of a call has completed: takes a stray early ring segment off the wire
// (a left neighbour that started a ring call while this rank is in another one), then runs the
// caller's check.
void firstRoundDone(AlgorithmContext& context);

// A first round with no payload (the fingerprints only), for algorithms that move their data by
// point-to-point messages; skipped when the caller's check wants none.
void fingerprintRound(AlgorithmContext& context);

}  // namespace ringsync::detail
