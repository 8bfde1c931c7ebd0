// The fingerprint every collective carries: what a rank believes the call is. Ranks exchange it
// (piggy-backed on the data where the algorithm sends to every peer anyway) and compare.
#pragma once

#include <cstdint>
#include <string>

#include "collective_kinds.h"
#include "ringsync/types.h"

namespace ringsync::detail {

// Where a call's buffers live. Part of the fingerprint: one rank passing host memory while the
// others pass device memory is a MismatchError, found before any NCCL bootstrap or device work.
enum class MemoryKind : std::uint32_t { kHost = 0, kDevice = 1 };
const char* memoryKindName(MemoryKind kind);

// What a header holds for a call without a type (barrier) or without an operator (broadcast,
// all-gather, barrier): values outside the enums, so they never equal a real one.
inline constexpr DataType kNoDataType = static_cast<DataType>(-1);
inline constexpr ReduceOp kNoReduceOp = static_cast<ReduceOp>(-1);

struct CallHeader {
  std::uint64_t sequence = 0;  // the call's number on this communicator, from 0
  std::uint64_t count = 0;     // elements, as the call's `count` argument (call.h)
  CollectiveKind kind{};       // zero: no call yet
  DataType dataType = kNoDataType;
  ReduceOp op = kNoReduceOp;              // set for the reducing collectives only
  std::int32_t root = -1;                 // broadcast root, -1 otherwise
  MemoryKind memory = MemoryKind::kHost;  // ranks must agree on it before any device work
  std::uint32_t flags = 0;                // kFlag* below
  // When this rank entered the call, in nanoseconds of the steady clock aligned to rank 0's
  // (src/clock_offset.h); 0 when this rank does not measure (no timeline, log level below info).
  // Like flags a per-rank observation, not part of the call: every rank receives every rank's,
  // which is how each learns who arrived last without another message.
  std::int64_t arrivalNs = 0;
};
static_assert(sizeof(DataType) == 4 && sizeof(ReduceOp) == 4, "the header's enums are sent as 32-bit values");
static_assert(sizeof(CallHeader) == 48, "CallHeader is sent as raw bytes");

inline constexpr std::uint32_t kFlagNonFiniteInput = 1u << 0;  // RINGSYNC_CHECK_FINITE found NaN/Inf
// CallHeader::flags bit: this rank's ring all-reduce sent its first segment to its right
// neighbour (ring rank + 1) before the fingerprints were compared, to hide the exchange's latency
// (RingAllreduce::startEarly). A neighbour that turns out to be in a different call must consume
// that message so nothing stale is left for a later call; complete() does it.
inline constexpr std::uint32_t kFlagEarlyRingSend = 1u << 31;

// The kind's name (collective_kinds.h), "unknown-collective" for a value outside the enum.
const char* collectiveName(CollectiveKind kind);

// "allreduce #41 count=1000 float32 sum" / "broadcast #3 count=8 int32 root=1" / "barrier #7" /
// "reducescatter #5 count=250 float32 avg"; " on device buffers" follows for device memory.
std::string describeCall(const CallHeader& header);

// Same call? (Everything but flags and arrivalNs, which carry per-rank observations.)
bool sameCall(const CallHeader& a, const CallHeader& b);

}  // namespace ringsync::detail
