#include "direct_broadcast.h"

#include <cstring>

namespace ringsync::detail {

void directBroadcast(AlgorithmContext& context, const Call& args) {
  const bool isRoot = context.rank == args.root;
  const std::size_t bytes = args.blockBytes();
  RoundTransport& round = context.rounds;
  round.run(context.header, isRoot ? args.recv : nullptr, isRoot ? bytes : 0, context.deadline);
  firstRoundDone(context);
  round.requirePayloadBytes([&](int r) { return r == args.root ? bytes : std::size_t{0}; });
  if (!isRoot && bytes > 0) std::memcpy(args.recv, round.payload(args.root), bytes);
}

}  // namespace ringsync::detail
