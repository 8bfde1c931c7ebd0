#include "staged_path.h"

namespace ringsync::detail {

void stagedAllreduce(StagingMemory& memory, const void* send, void* recv, std::size_t bytes, CUstream_st* stream,
                     const HostStep& allreduceInPlace) {
  void* host = memory.hostBuffer(bytes);
  if (bytes > 0) memory.download(host, send, bytes, stream);
  allreduceInPlace(host);
  if (bytes == 0) return;
  memory.upload(recv, host, bytes, stream);
  if (stream == nullptr) memory.finish();
}

void stagedBroadcast(StagingMemory& memory, void* buf, std::size_t bytes, bool isRoot, CUstream_st* stream,
                     const HostStep& broadcastInPlace) {
  void* host = memory.hostBuffer(bytes);
  if (isRoot && bytes > 0) memory.download(host, buf, bytes, stream);
  broadcastInPlace(host);
  if (isRoot || bytes == 0) return;
  memory.upload(buf, host, bytes, stream);
  if (stream == nullptr) memory.finish();
}

}  // namespace ringsync::detail
