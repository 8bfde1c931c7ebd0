#include "argument_checks.h"

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {
[[noreturn]] void reject(const char* call, const std::string& what) {
  throw InvalidArgument(std::string(call) + ": " + what);
}
std::string pointerText(const void* p) {
  std::ostringstream out;
  out << p;
  return out.str();
}

void checkType(const char* call, DataType type) {
  if (!isValid(type)) reject(call, "type=" + std::to_string(static_cast<int>(type)) + " is not a ringsync::DataType");
}

void checkOp(const char* call, ReduceOp op) {
  if (!isValid(op)) reject(call, "op=" + std::to_string(static_cast<int>(op)) + " is not a ringsync::ReduceOp");
}

// No 64-bit system maps more user address space than 2^57 bytes (x86-64 with 5-level paging has
// 2^56, AArch64 at most 2^52), so a larger buffer cannot exist: such a count is a bug upstream
// (an unsigned underflow, a garbage size), caught here before anything is read or written.
constexpr std::uintmax_t kMaxBufferBytes = std::min<std::uintmax_t>(std::uintmax_t{1} << 57,
                                                                    static_cast<std::uintmax_t>(PTRDIFF_MAX));

void checkCount(const char* call, std::size_t count, DataType type) {
  const std::size_t limit = static_cast<std::size_t>(kMaxBufferBytes) / dataTypeSize(type);
  if (count > limit)
    reject(call, "count=" + std::to_string(count) + " " + dataTypeName(type) + " elements exceeds the address space");
}

void checkGatheredCount(const char* call, std::size_t count, DataType type, int ranks) {
  checkCount(call, count, type);
  const std::size_t limit = static_cast<std::size_t>(kMaxBufferBytes) / dataTypeSize(type);
  if (count > limit / static_cast<std::size_t>(ranks))
    reject(call, "count=" + std::to_string(count) + " " + dataTypeName(type) + " elements times " +
                     std::to_string(ranks) + " ranks exceeds the address space");
}

void checkBuffer(const char* call, const char* name, const void* buffer, std::size_t count, std::size_t bytes) {
  if (buffer == nullptr && count > 0) reject(call, std::string(name) + " is null with count=" + std::to_string(count));
  const auto start = reinterpret_cast<std::uintptr_t>(buffer);
  if (bytes > UINTPTR_MAX - start)
    reject(call, std::string(name) + "=" + pointerText(buffer) + " with " + std::to_string(bytes) +
                     " bytes wraps around the address space");
}

void checkRoot(const char* call, int root, int size) {
  if (root < 0 || root >= size)
    reject(call, "root=" + std::to_string(root) + " is out of range [0, " + std::to_string(size) + ")");
}

void checkOverlap(const char* call, const void* send, const void* recv, std::size_t sendBytes, std::size_t recvBytes) {
  if (send == recv || sendBytes == 0 || recvBytes == 0) return;
  const auto s = reinterpret_cast<std::uintptr_t>(send);
  const auto r = reinterpret_cast<std::uintptr_t>(recv);
  if (s < r + recvBytes && r < s + sendBytes)
    reject(call, "send=" + pointerText(send) + " and recv=" + pointerText(recv) +
                     " overlap without being the same buffer (in place needs send == recv)");
}

// An in-place call names one buffer inside the other at this rank's block (`inner` = `outer` +
// rank · block); any other overlap is rejected.
void checkBlockOverlap(const char* call, const char* innerName, const void* inner, const char* outerName,
                       const void* outer, std::size_t blockBytes, int rank, int size) {
  const void* ownBlock = static_cast<const std::byte*>(outer) + static_cast<std::size_t>(rank) * blockBytes;
  if (inner == ownBlock || blockBytes == 0) return;
  const auto i = reinterpret_cast<std::uintptr_t>(inner);
  const auto o = reinterpret_cast<std::uintptr_t>(outer);
  const std::size_t outerBytes = blockBytes * static_cast<std::size_t>(size);
  if (i < o + outerBytes && o < i + blockBytes)
    reject(call, std::string(innerName) + "=" + pointerText(inner) + " overlaps " + outerName + "=" +
                     pointerText(outer) + " without being this rank's block of it (in place needs " + innerName +
                     " == " + outerName + " + rank * count elements, " + pointerText(ownBlock) + " on rank " +
                     std::to_string(rank) + ")");
}

}  // namespace

void checkArguments(const Call& c, int rank, int size) {
  const CollectiveTraits& kind = traitsOf(c.kind);
  const char* call = kind.name;
  if (kind.shape == BufferShape::kNone) return;
  checkType(call, c.type);
  if (kind.reduces) checkOp(call, c.op);
  if (kind.rooted) checkRoot(call, c.root, size);
  const bool blockwise = kind.shape == BufferShape::kRecvIsSendBlock || kind.shape == BufferShape::kSendIsRecvBlock;
  if (blockwise) {
    checkGatheredCount(call, c.count, c.type, size);
  } else {
    checkCount(call, c.count, c.type);
  }
  if (kind.shape == BufferShape::kOneBuffer) return checkBuffer(call, "buf", c.recv, c.count, c.blockBytes());
  const std::size_t es = c.elementBytes();
  const std::size_t sendCount = sendElements(kind.shape, c.count, size),
                    recvCount = recvElements(kind.shape, c.count, size);
  checkBuffer(call, "send", c.send, sendCount, sendCount * es);
  checkBuffer(call, "recv", c.recv, recvCount, recvCount * es);
  switch (kind.shape) {
    case BufferShape::kSameSize: return checkOverlap(call, c.send, c.recv, sendCount * es, recvCount * es);
    case BufferShape::kRecvIsSendBlock:
      return checkBlockOverlap(call, "recv", c.recv, "send", c.send, c.blockBytes(), rank, size);
    case BufferShape::kSendIsRecvBlock:
      return checkBlockOverlap(call, "send", c.send, "recv", c.recv, c.blockBytes(), rank, size);
    case BufferShape::kNone:
    case BufferShape::kOneBuffer: return;
  }
}

}  // namespace ringsync::detail
