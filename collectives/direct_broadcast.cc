#include "direct_broadcast.h"

#include <cstring>

namespace ringsync::detail {

void directBroadcast(AlgorithmContext& context, const BroadcastArgs& args) {
  const bool isRoot = context.rank == args.root;
  RoundTransport& round = context.rounds;
  round.run(context.header, isRoot ? args.buf : nullptr, isRoot ? args.bytes : 0, context.deadline);
  firstRoundDone(context);
  round.requirePayloadBytes([&](int r) { return r == args.root ? args.bytes : std::size_t{0}; });
  if (!isRoot && args.bytes > 0) std::memcpy(args.buf, round.payload(args.root), args.bytes);
}

}  // namespace ringsync::detail
