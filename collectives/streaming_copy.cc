#include "streaming_copy.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ringsync/errors.h"

namespace ringsync::detail {

void streamingCopy(std::byte* to, const std::byte* from, std::size_t bytes) {
#if defined(__SSE2__)
  // Non-temporal stores want 16-byte aligned destinations: the head up to that is copied plainly.
  const std::size_t head = std::min(bytes, (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16);
  std::memcpy(to, from, head);
  to += head, from += head, bytes -= head;
  for (; bytes >= 64; bytes -= 64, to += 64, from += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(to), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(to + 48), d);
  }
  std::memcpy(to, from, bytes);
  _mm_sfence();  // non-temporal stores are weakly ordered: complete them before the release store
#else
  std::memcpy(to, from, bytes);
#endif
}

SharedCopyPolicy::Mode SharedCopyPolicy::modeFromEnvironment() {
  const char* value = std::getenv("RINGSYNC_SHM_STREAMING");
  if (value == nullptr || *value == '\0' || std::string(value) == "auto") return Mode::kAuto;
  if (std::string(value) == "1") return Mode::kAlwaysStream;
  if (std::string(value) == "0") return Mode::kNeverStream;
  throw InvalidArgument("RINGSYNC_SHM_STREAMING='" + std::string(value) + "': expected auto, 1 or 0");
}

}  // namespace ringsync::detail
