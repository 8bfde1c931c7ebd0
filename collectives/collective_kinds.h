// Every collective in one table: what the call pipeline, the argument rules, the fingerprint and
// the staged path need to know of a kind, so none of them switches on it.
//
// To add a collective: its CollectiveKind and its row below, its public method (a few lines in
// src/communicator.cc filling a Call), its algorithms (algorithm_table.h; a kind without a
// selection rule runs its first algorithm) and, for NCCL, its call in nccl_communicator.cc
// (without one, device buffers take the staged path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace ringsync::detail {

enum class CollectiveKind : std::int32_t { kAllreduce = 1, kBroadcast, kAllgather, kBarrier, kReduceScatter };

// How a call's buffers relate, with `count` the count the public call was given (as NCCL counts):
enum class BufferShape : std::uint8_t {
  kNone,             // no buffers, count 0 (barrier)
  kOneBuffer,        // one buffer `buf` of count elements (send == recv)
  kSameSize,         // send and recv of count elements; in place when send == recv, else disjoint
  kRecvIsSendBlock,  // send holds count · ranks, recv count: in place when recv is this rank's block of send
  kSendIsRecvBlock,  // send holds count, recv count · ranks: in place when send is this rank's block of recv
};

struct CollectiveTraits {
  CollectiveKind kind;
  const char* name;  // in errors, logs, the timeline and the fingerprint's description
  BufferShape shape;
  bool reduces;  // takes a ReduceOp (and RINGSYNC_CHECK_FINITE reads its input)
  // Takes a root: a one-buffer rooted call reads the root's buffer and writes the others', and
  // its pipelines run along the chain from the root rather than around the ring.
  bool rooted;
};

inline constexpr CollectiveTraits kCollectives[] = {
    {CollectiveKind::kAllreduce, "allreduce", BufferShape::kSameSize, true, false},
    {CollectiveKind::kBroadcast, "broadcast", BufferShape::kOneBuffer, false, true},
    {CollectiveKind::kAllgather, "allgather", BufferShape::kSendIsRecvBlock, false, false},
    {CollectiveKind::kBarrier, "barrier", BufferShape::kNone, false, false},
    {CollectiveKind::kReduceScatter, "reducescatter", BufferShape::kRecvIsSendBlock, true, false},
};

// In CollectiveKind's order, from 1: a kind's row is kCollectives[kind - 1].
constexpr bool rowsInKindOrder() {
  for (std::size_t i = 0; i < std::size(kCollectives); ++i)
    if (static_cast<std::size_t>(kCollectives[i].kind) != i + 1) return false;
  return true;
}
static_assert(rowsInKindOrder(), "kCollectives holds one row per CollectiveKind, in its order");

// The kind's row; nullptr for a value outside the enum (a corrupt header from a peer).
constexpr const CollectiveTraits* findCollective(CollectiveKind kind) {
  const auto index = static_cast<std::size_t>(kind) - 1;  // kind 0 wraps around: not found
  return index < std::size(kCollectives) ? &kCollectives[index] : nullptr;
}

[[noreturn]] void throwNotACollective(CollectiveKind kind);

// The kind's row; InvalidArgument for a value outside the enum.
inline const CollectiveTraits& traitsOf(CollectiveKind kind) {
  const CollectiveTraits* row = findCollective(kind);
  if (row == nullptr) throwNotACollective(kind);
  return *row;
}

// Elements of send and of recv for a call of `count` over `ranks` (BufferShape).
constexpr std::size_t sendElements(BufferShape shape, std::size_t count, int ranks) {
  return shape == BufferShape::kRecvIsSendBlock ? count * static_cast<std::size_t>(ranks) : count;
}
constexpr std::size_t recvElements(BufferShape shape, std::size_t count, int ranks) {
  return shape == BufferShape::kSendIsRecvBlock ? count * static_cast<std::size_t>(ranks) : count;
}

}  // namespace ringsync::detail
