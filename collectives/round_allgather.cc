#include "round_allgather.h"

#include <cstring>

#include "round_halves.h"

namespace ringsync::detail {

void roundAllgather(AlgorithmContext& context, const Call& call) {
  const ChunkLayout blocks(call.recvCount(context.size), context.size);
  const std::size_t ownBegin = blocks.begin(context.rank);
  gatherRound(context, blocks, call.elementBytes(), ContiguousView(call.send, call.elementBytes(), ownBegin),
              ContiguousView(call.recv, call.elementBytes()), true);
  std::byte* own = static_cast<std::byte*>(call.recv) + ownBegin * call.elementBytes();
  if (call.count > 0 && own != call.send) std::memcpy(own, call.send, call.blockBytes());
}

}  // namespace ringsync::detail
