#include "staged_path.h"

#include <algorithm>

namespace ringsync::detail {

StagedLayout stagedLayout(const Call& call, int rank, int size) {
  const CollectiveTraits& kind = call.traits();
  const std::size_t es = call.elementBytes();
  const std::size_t sendBytes = call.sendCount(size) * es, recvBytes = call.recvCount(size) * es;
  // The host buffer holds the larger of send and recv; the smaller sits at this rank's block of it,
  // which is the in-place form of the call.
  const std::size_t own = call.blockBytes() * static_cast<std::size_t>(rank);
  const std::size_t sendAt = kind.shape == BufferShape::kSendIsRecvBlock ? own : 0;
  const std::size_t recvAt = kind.shape == BufferShape::kRecvIsSendBlock ? own : 0;
  // A rooted call on one buffer (broadcast) reads the root's and writes everyone else's.
  const bool rootedOneBuffer = kind.rooted && kind.shape == BufferShape::kOneBuffer;
  const bool reads = !rootedOneBuffer || rank == call.root;
  const bool writes = !rootedOneBuffer || rank != call.root;
  return {std::max(sendBytes, recvBytes), sendAt, reads ? sendBytes : 0, sendAt, recvAt, recvAt,
          writes ? recvBytes : 0};
}

void stagedRun(StagingMemory& memory, const Call& call, int rank, int size, const HostStep& runOnHost) {
  const StagedLayout layout = stagedLayout(call, rank, size);
  auto* host = static_cast<std::byte*>(memory.hostBuffer(layout.hostBytes));
  if (layout.downloadBytes > 0) memory.download(host + layout.downloadAt, call.send, layout.downloadBytes, call.stream);
  Call onHost = call;
  onHost.send = host + layout.hostSendAt;
  onHost.recv = host + layout.hostRecvAt;
  onHost.stream = nullptr;
  runOnHost(onHost);
  if (layout.uploadBytes == 0) return;
  memory.upload(call.recv, host + layout.uploadAt, layout.uploadBytes, call.stream);
  if (call.stream == nullptr) memory.finish();
}

}  // namespace ringsync::detail
