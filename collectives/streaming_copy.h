// How a rank writes its payload into its shared-memory slot, and when it should bypass its cache.
//
// A peer reads the slot right after it is published. When the peer's core shares this core's last-
// level cache, the freshest copy of every line is close: an ordinary copy is fastest. When it does
// not (two sockets, two CCDs of one EPYC, or a VM whose vCPUs the host moved apart), each line the
// peer reads is a transfer out of this core's cache at cross-die latency, a few hundred ns a line,
// about 1.7 GB/s here; with non-temporal stores the lines go to memory and the peer streams them
// from there at memory bandwidth (bench/RESULTS.md section 16.10: 1 MiB all-reduces at np=2 took
// 510-620 us with ordinary stores in that state and 100-110 us with streaming stores, against
// 80 us with ordinary and 160-180 us with streaming stores when the cores share the cache).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringsync::detail {

// memcpy whose stores bypass the cache (non-temporal) where the CPU has them, ordinary elsewhere.
// The stores are fenced before it returns, so a release store after it publishes them.
void streamingCopy(std::byte* to, const std::byte* from, std::size_t bytes);

// Whether this rank writes its shared-memory payloads with streaming stores: yes while its peers
// read like peers beyond the cache. Judged from how fast this rank reads its peers' payloads in
// rounds they wrote with ordinary stores (a cache beyond reads at 1.3-2.5 GB/s here, a shared one
// at 8-15 GB/s). Streamed payloads read at memory speed wherever the peers are, so every
// kRecheckEvery-th round is written plainly to look again; the round number is the same on every
// rank, so all of a node's ranks look in the same round.
class SharedCopyPolicy {
 public:
  enum class Mode { kAuto, kAlwaysStream, kNeverStream };  // RINGSYNC_SHM_STREAMING=auto|1|0
  static Mode modeFromEnvironment();

  explicit SharedCopyPolicy(Mode mode) : mode_(mode) {}
  // Whether round `round`'s payload of `bytes` goes out with streaming stores.
  bool streams(std::uint64_t round, std::size_t bytes) const {
    if (mode_ != Mode::kAuto) return mode_ == Mode::kAlwaysStream;
    return bytes >= kStreamFromBytes && far_ && round % kRecheckEvery != 0;
  }
  // Whether a plain copy of `bytes` is worth timing (recordPlainCopy).
  bool measures(std::size_t bytes) const { return mode_ == Mode::kAuto && bytes >= kStreamFromBytes; }
  // What copying `bytes` into the slot with ordinary stores took.
  void recordPlainCopy(std::size_t bytes, double nanoseconds) {
    if (!measures(bytes) || nanoseconds <= 0) return;
    far_ = static_cast<double>(bytes) / nanoseconds < kFarBelowBytesPerNs;
  }
  bool peersFar() const { return far_; }

  static constexpr std::size_t kStreamFromBytes = 64 * 1024;  // below: latency, not bandwidth
  static constexpr double kFarBelowBytesPerNs = 4.0;          // GB/s, between the two states
  static constexpr std::uint64_t kRecheckEvery = 32;

 private:
  Mode mode_;
  bool far_ = false;
};

}  // namespace ringsync::detail
