#include "round_allgather.h"

#include <algorithm>
#include <cstring>

namespace ringsync::detail {

namespace {
std::byte* at(const void* base, std::size_t elements, std::size_t elementBytes) {
  return static_cast<std::byte*>(const_cast<void*>(base)) + elements * elementBytes;
}
}  // namespace

void roundAllgather(AlgorithmContext& context, const Call& call) {
  const int n = context.size, me = context.rank;
  const std::size_t es = call.elementBytes(), count = call.count;
  RoundTransport& round = context.rounds;
  const std::size_t piece = std::max<std::size_t>(1, round.maxPayloadBytes() / es);
  std::size_t begin = 0;
  do {  // one round at least: the first carries the fingerprints, for count 0 too
    const std::size_t length = std::min(piece, count - begin);
    const PayloadPiece mine{at(call.send, begin, es), length * es};
    round.begin(context.header, &mine, 1);
    round.complete(context.deadline);
    if (begin == 0) firstRoundDone(context);  // before recv is written
    round.requirePayloadBytes([&](int) { return length * es; });
    for (int r = 0; r < n; ++r)
      if (r != me && length > 0)
        std::memcpy(at(call.recv, static_cast<std::size_t>(r) * count + begin, es), round.payload(r), length * es);
    begin += length;
  } while (begin < count);
  std::byte* own = at(call.recv, static_cast<std::size_t>(me) * count, es);
  if (count > 0 && own != call.send) std::memcpy(own, call.send, call.blockBytes());
}

}  // namespace ringsync::detail
