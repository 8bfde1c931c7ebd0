#include "chain_broadcast.h"

#include <algorithm>

namespace ringsync::detail {

void chainBroadcast(AlgorithmContext& context, const Call& args) {
  fingerprintRound(context);
  const int rank = context.rank, size = context.size, root = args.root;
  const std::size_t bytes = args.blockBytes();
  if (size == 1 || bytes == 0) return;
  Deadline& deadline = context.deadline;
  const int position = (rank - root + size) % size;  // 0 at the root, size-1 at the chain's end
  const int previous = (rank - 1 + size) % size;
  const int next = (rank + 1) % size;
  const bool receives = position > 0;
  const bool forwards = position < size - 1;
  const std::size_t segmentBytes = context.ring.segmentBytes;
  const std::size_t segments = (bytes + segmentBytes - 1) / segmentBytes;
  const std::size_t depth = static_cast<std::size_t>(context.ring.depth);
  auto* data = static_cast<std::byte*>(args.recv);
  auto segmentSize = [&](std::size_t s) { return std::min(segmentBytes, bytes - s * segmentBytes); };

  // Slots [0, depth) receive, [depth, 2·depth) send. A segment is forwarded once it has arrived.
  RequestGroup requests(context.comm, 2 * depth);
  std::size_t recvPosted = 0, recvDone = receives ? 0 : segments, sendPosted = 0, sendDone = forwards ? 0 : segments;
  while (recvDone < segments || sendDone < segments) {
    bool progressed = false;
    while (receives && recvPosted < segments && recvPosted < recvDone + depth) {
      requests.recv(recvPosted % depth, data + recvPosted * segmentBytes, segmentSize(recvPosted), previous,
                    kTagBroadcast);
      ++recvPosted;
      progressed = true;
    }
    if (recvDone < recvPosted && requests.test(recvDone % depth)) {
      ++recvDone;
      progressed = true;
    }
    const std::size_t available = receives ? recvDone : segments;
    while (forwards && sendPosted < available && sendPosted < sendDone + depth) {
      requests.send(depth + sendPosted % depth, data + sendPosted * segmentBytes, segmentSize(sendPosted), next,
                    kTagBroadcast);
      ++sendPosted;
      progressed = true;
    }
    while (sendDone < sendPosted && requests.test(depth + sendDone % depth)) {
      ++sendDone;
      progressed = true;
    }
    if (progressed) {
      deadline.progressed();
    } else {
      deadline.idle([&] { return requests.pendingPeers(); });
    }
  }
}

}  // namespace ringsync::detail
