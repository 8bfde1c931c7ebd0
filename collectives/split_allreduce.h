// The one-node all-reduce from mid-sized messages up: the reduce-scatter round and the all-gather
// round (round_halves.h) through the shared-memory slots, with no MPI message at all; past one
// round's worth, piece after piece (splitAllreduce below).
//
//   round 1  rank r publishes every chunk of its input but its own chunk r   ((n-1)/n·S)
//            rank r reduces chunk r: its own input chunk with each peer's copy, peers in rank order
//   round 2  rank r publishes its finished chunk r                           (S/n)
//            rank r copies every peer's finished chunk into recv
//
// Each chunk is reduced once, by its owner, so every rank ends with the same bits (kAvg divides
// once, on the owned chunk). Per rank it moves ~4·S through memory at n=2 against the direct
// round's ~5·S (every rank copying all of its input, then reducing all of it), and it needs no
// rendezvous per segment as the ring over MPI does. Round 1 carries the fingerprints, checked
// before any peer's data is read. Where it is chosen: src/algorithm_selection.cc.
#pragma once

#include <cstddef>

#include "algorithm_context.h"
#include "call.h"
#include "chunk_layout.h"
#include "round_halves.h"

namespace ringsync::detail {

// The chunks (chunk_layout.h) and where each sits in a rank's first-round payload.
class SplitChunks : public ChunkLayout {
 public:
  using ChunkLayout::ChunkLayout;
  // Where chunk c sits in rank r's round-1 payload (which leaves out chunk r), in elements.
  std::size_t offsetIn(int r, int c) const { return offsetInScatterPayload(*this, r, c); }
  // The largest round-1 payload of any rank, in elements (the rank with the smallest chunk).
  std::size_t largestGather() const { return count() - length(ranks() - 1); }
};

// The most elements one split all-reduce may take through rounds of `roundPayloadBytes` per rank
// among `ranks` ranks: its first round carries all but the own chunk, so ranks/(ranks-1) rounds'
// worth, less the few elements the uneven chunks may add (at least 1).
std::size_t splitPieceElements(std::size_t roundPayloadBytes, int ranks, std::size_t elementBytes);

// An array longer than one round's worth (splitPieceElements) goes piece after piece, each piece
// the two rounds above; the first piece's first round carries the check, so nothing is written
// into recv before it. A scattered buffer is cut the same way: its gradients stay where they lie.
void splitAllreduce(AlgorithmContext& context, const Call& args);

// splitAllreduce in its three steps, for an algorithm that works between them (the hierarchical
// all-reduce, hierarchical_allreduce.h), on contiguous buffers only (args.scattered unset):
//   splitScatterRound   round 1 (carries context.header); the caller then runs firstRoundDone()
//   splitReduceOwnChunk recv[own chunk] = every rank's copy reduced (kAvg: divided by context.size)
//   splitGatherRound    round 2: every rank's recv[own chunk] copied into every rank's recv
void splitScatterRound(AlgorithmContext& context, const Call& args);
void splitReduceOwnChunk(AlgorithmContext& context, const Call& args);
void splitGatherRound(AlgorithmContext& context, const Call& args);

}  // namespace ringsync::detail
