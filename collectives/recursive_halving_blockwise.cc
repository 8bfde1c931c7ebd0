#include "recursive_halving_blockwise.h"

#include <string>

#include "another_algorithm_watch.h"
#include "butterfly.h"

namespace ringsync::detail {
namespace {

// One butterfly across all ranks, under the watch for a peer that took another algorithm.
template <typename Fn> void acrossAllRanks(AlgorithmContext& context, const Call& call, Fn&& run) {
  if (call.scattered != nullptr || context.doublingBuffers == nullptr || context.pieceScratch == nullptr)
    throw InvalidArgument(std::string(collectiveName(call.kind)) +
                          ": the butterfly takes contiguous buffers and the communicator's doubling buffers and "
                          "working memory");
  // Where nodes hold L >= 2 ranks, a peer in another call may be in a node round (the hierarchical
  // Rabenseifner or recursive doubling), waiting for this rank to join it: only a round on the whole
  // communicator brings it out (its watch looks for one). The halves run there only when forced.
  if (context.hierarchy != nullptr) fingerprintRound(context);
  try {
    AnotherAlgorithmWatch watch(context);
    CallSummary summary;
    summary.add(context.rank, context.header);
    Butterfly butterfly({context.comm, context.rank, context.size, nullptr}, *context.doublingBuffers,
                        *context.pieceScratch, context.header, summary, context.deadline);
    try {
      run(butterfly);
    } catch (...) {
      if (butterfly.workLeftToMpi()) context.pieceScratch->abandon();
      throw;
    }
    raiseOnDisagreement(context, summary);
  } catch (const PeerTookAnotherAlgorithm&) {
    joinTheirRound(context);
  }
}

}  // namespace

void recursiveHalvingReduceScatter(AlgorithmContext& context, const Call& call) {
  const ReduceOp op = call.op == ReduceOp::kAvg ? ReduceOp::kSum : call.op;
  const int divisor = call.op == ReduceOp::kAvg ? context.size : 1;
  acrossAllRanks(context, call, [&](Butterfly& butterfly) {
    butterfly.reduceScatter(call.send, call.recv, call.count, call.type, op, divisor);
  });
}

void recursiveDoublingAllgather(AlgorithmContext& context, const Call& call) {
  acrossAllRanks(context, call,
                 [&](Butterfly& butterfly) { butterfly.allgather(call.send, call.recv, call.count, call.type); });
}

}  // namespace ringsync::detail
