#include "staged_path.h"

namespace ringsync::detail {

StagedLayout stagedLayout(const Call& call, int rank, int size) {
  const std::size_t block = call.blockBytes();
  const std::size_t all = block * static_cast<std::size_t>(size);
  const std::size_t own = block * static_cast<std::size_t>(rank);
  switch (call.kind) {
    case CollectiveKind::kReduceScatter: return {all, 0, all, 0, own, own, block};
    case CollectiveKind::kAllgather: return {all, own, block, own, 0, 0, all};
    case CollectiveKind::kBroadcast: {
      const bool root = rank == call.root;
      return {block, 0, root ? block : 0, 0, 0, 0, root ? 0 : block};
    }
    case CollectiveKind::kAllreduce:
    case CollectiveKind::kBarrier: break;
  }
  return {block, 0, block, 0, 0, 0, block};
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
