#include "split_allreduce.h"

#include "round_halves.h"

namespace ringsync::detail {
namespace {

// The reduce-scatter round into `out`'s own chunk, then the all-gather round out of it.
template <typename In, typename Out>
void splitOver(AlgorithmContext& context, const Call& args, const In& in, const Out& out) {
  const ChunkLayout chunks(args.count, context.size);
  scatterRound(context, chunks, in);
  firstRoundDone(context);
  reduceOwnChunk(context, chunks, args.type, args.op, in, out);
  gatherRound(context, chunks, args.elementBytes(), out, out, false);
}

ContiguousView inputOf(const Call& args) { return ContiguousView(args.send, args.elementBytes()); }
ContiguousView outputOf(const Call& args) { return ContiguousView(args.recv, args.elementBytes()); }

}  // namespace

void splitAllreduce(AlgorithmContext& context, const Call& args) {
  if (args.scattered != nullptr) return splitOver(context, args, *args.scattered, *args.scattered);
  splitOver(context, args, inputOf(args), outputOf(args));
}

void splitScatterRound(AlgorithmContext& context, const Call& args) {
  scatterRound(context, ChunkLayout(args.count, context.size), inputOf(args));
}
void splitReduceOwnChunk(AlgorithmContext& context, const Call& args) {
  reduceOwnChunk(context, ChunkLayout(args.count, context.size), args.type, args.op, inputOf(args), outputOf(args));
}
void splitGatherRound(AlgorithmContext& context, const Call& args) {
  const ContiguousView out = outputOf(args);
  gatherRound(context, ChunkLayout(args.count, context.size), args.elementBytes(), out, out, false);
}

}  // namespace ringsync::detail
