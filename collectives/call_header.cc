#include "call_header.h"

#include "ringsync/types.h"

namespace ringsync::detail {

const char* collectiveName(CollectiveKind kind) {
  const CollectiveTraits* row = findCollective(kind);
  return row == nullptr ? "unknown-collective" : row->name;
}

const char* memoryKindName(MemoryKind kind) { return kind == MemoryKind::kHost ? "host" : "device"; }

std::string describeCall(const CallHeader& header) {
  std::string text = std::string(collectiveName(header.kind)) + " #" + std::to_string(header.sequence);
  const CollectiveTraits* row = findCollective(header.kind);
  if (row == nullptr || row->shape == BufferShape::kNone) return text;
  text += " count=" + std::to_string(header.count) + " " + dataTypeName(header.dataType);
  if (header.op != kNoReduceOp) text += std::string(" ") + reduceOpName(header.op);
  if (row->rooted) text += " root=" + std::to_string(header.root);
  if (header.memory == MemoryKind::kDevice) text += " on device buffers";
  return text;
}

bool sameCall(const CallHeader& a, const CallHeader& b) {
  return a.sequence == b.sequence && a.count == b.count && a.kind == b.kind && a.dataType == b.dataType &&
         a.op == b.op && a.root == b.root && a.memory == b.memory;
}

}  // namespace ringsync::detail
