#include "algorithm_context.h"

#include "ring_pipeline.h"

namespace ringsync::detail {

void firstRoundDone(AlgorithmContext& context) {
  const RoundTransport& round = context.rounds;
  if (context.size > 1) {
    const int left = (context.rank - 1 + context.size) % context.size;
    if ((round.header(left).flags & kFlagEarlyRingSend) && !(round.header(context.rank).flags & kFlagEarlyRingSend))
      discardStrayRingSegment(context.comm, left, context.deadline);
  }
  context.check.afterFirstRound(round);
}

void fingerprintRound(AlgorithmContext& context) {
  if (!context.check.wantsRound()) return;
  context.rounds.run(context.header, nullptr, 0, context.deadline);
  firstRoundDone(context);
}

}  // namespace ringsync::detail
