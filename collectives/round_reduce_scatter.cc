#include "round_reduce_scatter.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reduce_kernels.h"

namespace ringsync::detail {

namespace {
std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}
}  // namespace

void roundReduceScatter(AlgorithmContext& context, const Call& call) {
  const int n = context.size, me = context.rank;
  const std::size_t es = call.elementBytes(), count = call.count;
  RoundTransport& round = context.rounds;
  // A round carries n-1 slices of `piece` elements per rank (every block's slice but the own).
  const std::size_t piece = n > 1 ? std::max<std::size_t>(1, round.maxPayloadBytes() /
                                                                 (static_cast<std::size_t>(n - 1) * es))
                                  : count;
  std::vector<PayloadPiece> slices(static_cast<std::size_t>(std::max(n - 1, 1)));
  std::size_t begin = 0;
  do {  // one round at least: the first carries the fingerprints, for count 0 too
    const std::size_t length = std::min(piece, count - begin);
    for (int b = 0, k = 0; b < n; ++b)
      if (b != me)
        slices[static_cast<std::size_t>(k++)] = {at(call.send, static_cast<std::size_t>(b) * count + begin, es),
                                                 length * es};
    round.begin(context.header, slices.data(), static_cast<std::size_t>(n - 1));
    round.complete(context.deadline);
    if (begin == 0) firstRoundDone(context);
    round.requirePayloadBytes([&](int) { return static_cast<std::size_t>(n - 1) * length * es; });
    // recv's slice = the own block's slice op every peer's copy of it, peers in rank order (in
    // place the two are the same memory, each element read before it is written).
    std::byte* target = at(call.recv, begin, es);
    const void* acc = at(call.send, static_cast<std::size_t>(me) * count + begin, es);
    for (int r = 0; r < n; ++r) {
      if (r == me) continue;
      const std::size_t slot = static_cast<std::size_t>(me - (me > r ? 1 : 0));  // r's payload skips r's block
      reduceElements(target, acc, round.payload(r) + slot * length * es, length, call.type, call.op);
      acc = target;
    }
    if (n == 1 && target != acc && length > 0) std::memcpy(target, acc, length * es);
    if (call.op == ReduceOp::kAvg) divideElements(target, length, call.type, n);
    begin += length;
  } while (begin < count);
}

}  // namespace ringsync::detail
