#include "round_reduce_scatter.h"

#include "round_halves.h"

namespace ringsync::detail {

void roundReduceScatter(AlgorithmContext& context, const Call& call) {
  const ChunkLayout blocks(call.sendCount(context.size), context.size);
  const ContiguousView in(call.send, call.elementBytes());
  const ContiguousView out(call.recv, call.elementBytes(), blocks.begin(context.rank));
  scatterRound(context, blocks, in);
  firstRoundDone(context);
  reduceOwnChunk(context, blocks, call.type, call.op, in, out);
}

}  // namespace ringsync::detail
