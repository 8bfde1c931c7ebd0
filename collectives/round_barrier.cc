#include "round_barrier.h"

namespace ringsync::detail {

void roundBarrier(AlgorithmContext& context) {
  context.rounds.run(context.header, nullptr, 0, context.deadline);
  firstRoundDone(context);
}

}  // namespace ringsync::detail
