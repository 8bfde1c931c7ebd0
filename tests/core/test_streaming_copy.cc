// The shared-memory payload copy with streaming stores (any alignment and length, byte for byte)
// and the policy that decides when a rank streams: after a plain copy slower than a cache beyond
// (its peers far), except every kRecheckEvery-th round; never for small payloads; fixed by
// RINGSYNC_SHM_STREAMING=1/0. The collectives over streamed payloads run in the *.streaming tests.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "collectives/streaming_copy.h"
#include "ringsync/errors.h"

using namespace ringsync;
using namespace ringsync::detail;

TEST_CASE("streamingCopy copies every byte at any alignment and length", "[units][streaming]") {
  std::vector<std::byte> source(70000);
  for (std::size_t i = 0; i < source.size(); ++i) source[i] = static_cast<std::byte>((i * 131 + 7) % 251);
  for (std::size_t offset : {0, 1, 7, 15, 16, 33}) {
    for (std::size_t bytes : {0, 1, 15, 16, 17, 63, 64, 65, 1000, 65536 + 7}) {
      std::vector<std::byte> target(bytes + 2 * 64, std::byte{0xEE});
      streamingCopy(target.data() + offset, source.data() + 3, bytes);
      for (std::size_t i = 0; i < offset; ++i) REQUIRE(target[i] == std::byte{0xEE});
      for (std::size_t i = 0; i < bytes; ++i) REQUIRE(target[offset + i] == source[3 + i]);
      for (std::size_t i = offset + bytes; i < target.size(); ++i) REQUIRE(target[i] == std::byte{0xEE});
    }
  }
}

TEST_CASE("SharedCopyPolicy streams after a slow plain copy, looks again every kRecheckEvery rounds",
          "[units][streaming]") {
  SharedCopyPolicy policy(SharedCopyPolicy::Mode::kAuto);
  const std::size_t big = 1 << 20, small = SharedCopyPolicy::kStreamFromBytes - 1;
  CHECK_FALSE(policy.streams(1, big));  // near until a copy says otherwise
  CHECK(policy.measures(big));
  CHECK_FALSE(policy.measures(small));
  policy.recordPlainCopy(big, static_cast<double>(big) / 2.0);  // 2 GB/s: peers beyond the cache
  CHECK(policy.peersFar());
  CHECK(policy.streams(1, big));
  CHECK_FALSE(policy.streams(SharedCopyPolicy::kRecheckEvery, big));  // a plain round to look again
  CHECK_FALSE(policy.streams(1, small));
  policy.recordPlainCopy(small, 1e9);  // a small copy says nothing
  CHECK(policy.peersFar());
  policy.recordPlainCopy(big, static_cast<double>(big) / 30.0);  // 30 GB/s: a shared cache again
  CHECK_FALSE(policy.peersFar());
  CHECK_FALSE(policy.streams(1, big));
}

TEST_CASE("SharedCopyPolicy: RINGSYNC_SHM_STREAMING fixes the choice", "[units][streaming]") {
  SharedCopyPolicy always(SharedCopyPolicy::Mode::kAlwaysStream), never(SharedCopyPolicy::Mode::kNeverStream);
  CHECK(always.streams(SharedCopyPolicy::kRecheckEvery, 8));
  CHECK_FALSE(always.measures(1 << 20));
  never.recordPlainCopy(1 << 20, 1e9);
  CHECK_FALSE(never.streams(1, 1 << 20));

  ::setenv("RINGSYNC_SHM_STREAMING", "1", 1);
  CHECK(SharedCopyPolicy::modeFromEnvironment() == SharedCopyPolicy::Mode::kAlwaysStream);
  ::setenv("RINGSYNC_SHM_STREAMING", "0", 1);
  CHECK(SharedCopyPolicy::modeFromEnvironment() == SharedCopyPolicy::Mode::kNeverStream);
  ::setenv("RINGSYNC_SHM_STREAMING", "auto", 1);
  CHECK(SharedCopyPolicy::modeFromEnvironment() == SharedCopyPolicy::Mode::kAuto);
  ::setenv("RINGSYNC_SHM_STREAMING", "yes", 1);
  CHECK_THROWS_WITH(SharedCopyPolicy::modeFromEnvironment(), Catch::Contains("RINGSYNC_SHM_STREAMING='yes'"));
  ::unsetenv("RINGSYNC_SHM_STREAMING");
  CHECK(SharedCopyPolicy::modeFromEnvironment() == SharedCopyPolicy::Mode::kAuto);
}
