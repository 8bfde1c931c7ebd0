#include "round_barrier.h"

namespace ringsync::detail {

void roundBarrier(AlgorithmContext& context, const Call&) {
  context.rounds.run(context.header, nullptr, 0, context.deadline);
  firstRoundDone(context);
}

}  // namespace ringsync::detail
