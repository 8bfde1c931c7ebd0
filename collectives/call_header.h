// The fingerprint every collective carries: what a rank believes the call is. Ranks exchange it
// (piggy-backed on the data where the algorithm sends to every peer anyway) and compare.
#pragma once

#include <cstdint>
#include <string>

namespace ringsync::detail {

enum class CollectiveKind : std::int32_t { kAllreduce = 1, kBroadcast, kAllgather, kBarrier };

// Where a call's buffers live. Part of the fingerprint: one rank passing host memory while the
// others pass device memory is a MismatchError, found before any NCCL bootstrap or device work.
enum class MemoryKind : std::uint32_t { kHost = 0, kDevice = 1 };
const char* memoryKindName(MemoryKind kind);

struct CallHeader {
  std::uint64_t sequence = 0;     // the call's number on this communicator, from 0
  std::uint64_t count = 0;        // elements
  std::int32_t kind = 0;          // CollectiveKind
  std::int32_t dataType = -1;     // DataType, -1 when the call has none (barrier)
  std::int32_t op = -1;           // ReduceOp, -1 when the call has none
  std::int32_t root = -1;         // broadcast root, -1 otherwise
  std::uint32_t memory = 0;       // MemoryKind of the buffers: ranks must agree before any device work
  std::uint32_t flags = 0;        // kFlag* below
  // When this rank entered the call, in nanoseconds of the steady clock aligned to rank 0's
  // (src/clock_offset.h); 0 when this rank does not measure (no timeline, log level below info).
  // Like flags a per-rank observation, not part of the call: every rank receives every rank's,
  // which is how each learns who arrived last without another message.
  std::int64_t arrivalNs = 0;
};
static_assert(sizeof(CallHeader) == 48, "CallHeader is sent as raw bytes");

inline constexpr std::uint32_t kFlagNonFiniteInput = 1u << 0;  // RINGSYNC_CHECK_FINITE found NaN/Inf
// CallHeader::flags bit: this rank's ring all-reduce sent its first segment to its right
// neighbour (ring rank + 1) before the fingerprints were compared, to hide the exchange's latency
// (RingAllreduce::startEarly). A neighbour that turns out to be in a different call must consume
// that message so nothing stale is left for a later call; complete() does it.
inline constexpr std::uint32_t kFlagEarlyRingSend = 1u << 31;

const char* collectiveName(CollectiveKind kind);

// "allreduce #41 count=1000 float32 sum" / "broadcast #3 count=8 int32 root=1" / "barrier #7";
// " on device buffers" follows for device memory.
std::string describeCall(const CallHeader& header);

// Same call? (Everything but flags and arrivalNs, which carry per-rank observations.)
bool sameCall(const CallHeader& a, const CallHeader& b);

}  // namespace ringsync::detail
