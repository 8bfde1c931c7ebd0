// Checks every collective makes before it touches a buffer or sends a byte. Each failure is an
// InvalidArgument whose message names the argument and its value.
#pragma once

#include <cstddef>

#include "ringsync/types.h"

namespace ringsync::detail {

void checkType(const char* call, DataType type);
void checkOp(const char* call, ReduceOp op);
// count * size fits in a size_t and in what any 64-bit address space can map (2^57 bytes).
void checkCount(const char* call, std::size_t count, DataType type);
// checkCount for the count * ranks elements an allgather writes.
void checkGatheredCount(const char* call, std::size_t count, DataType type, int ranks);
// Not null when count > 0, and [buffer, buffer + bytes) does not wrap around the address space.
void checkBuffer(const char* call, const char* name, const void* buffer, std::size_t count, std::size_t bytes);
void checkRoot(const char* call, int root, int size);
// send and recv are either the same pointer (in place) or disjoint.
void checkOverlap(const char* call, const void* send, const void* recv, std::size_t sendBytes, std::size_t recvBytes);

}  // namespace ringsync::detail
