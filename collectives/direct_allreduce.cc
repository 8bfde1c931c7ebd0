#include "direct_allreduce.h"

#include <cstring>

#include "reduce_kernels.h"

namespace ringsync::detail {

void directAllreduce(AlgorithmContext& context, const Call& args) {
  const std::size_t bytes = args.count * dataTypeSize(args.type);
  RoundTransport& round = context.rounds;
  round.run(context.header, args.send, bytes, context.deadline);
  firstRoundDone(context);
  round.requirePayloadBytes([bytes](int) { return bytes; });
  if (args.count == 0) return;
  // The round keeps a copy of this rank's own contribution, so `recv` may alias `send`.
  if (context.size == 1) {
    std::memcpy(args.recv, round.payload(0), bytes);
    return;
  }
  reduceElements(args.recv, round.payload(0), round.payload(1), args.count, args.type, args.op);
  for (int r = 2; r < context.size; ++r)
    reduceElements(args.recv, args.recv, round.payload(r), args.count, args.type, args.op);
  if (args.op == ReduceOp::kAvg) divideElements(args.recv, args.count, args.type, context.size);
}

}  // namespace ringsync::detail
