// Cross-rank consistency: after a call's first round every rank holds every rank's fingerprint.
// All ranks run the same comparison on the same data, so they reach the same verdict and raise
// the same error, naming the same ranks, without another message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/algorithm_context.h"
#include "collectives/round_transport.h"
#include "ringsync/options.h"

namespace ringsync::detail {

// The RINGSYNC_* settings that change what a rank sends, or whether it sends at all: the algorithm,
// the message sizes, which messages carry fingerprints, and where a buffer goes (RINGSYNC_BACKEND:
// a rank forced to `staged` refuses a host buffer at once, its peers would wait out the deadline).
// Ranks that differ here would truncate or miss each other's messages, so every Communicator
// compares them once, when it is built (MismatchError naming the ranks, on every rank).
// Left out on purpose, because they change nothing on the wire: RINGSYNC_RING_DEPTH(_ACROSS_NODES)
// (segments in flight: the same segments in the same order, only posted earlier or later),
// RINGSYNC_TIMEOUT_SECONDS and RINGSYNC_STALL_WARN_SECONDS (when this rank gives up or warns),
// RINGSYNC_SPIN_WAIT (how it waits), RINGSYNC_LOG and RINGSYNC_TIMELINE (whether arrival times
// are measured is agreed separately, call_tracer.h), RINGSYNC_CUDA_DEVICE (which local GPU).
// RINGSYNC_BUCKET_BYTES / RINGSYNC_FIRST_BUCKET_BYTES decide a GradientAverager's calls and are
// compared by each averager when it is built (gradient_averager_checks.cc), not here: a
// Communicator without an averager never uses them.
struct SettingsRecord {
  std::uint64_t ringSegmentBytes = 0;
  std::uint64_t ringSegmentBytesAcrossNodes = 0;
  std::uint64_t smallBytes = 0;
  std::uint64_t networkLatencyBytes = 0;     // moves the automatic choice's crossovers
  std::uint64_t reduceToLinkMillionths = 0;  // likewise: reduceToLinkRatio x 10^6, rounded
  std::int32_t algorithm = 0;
  std::int32_t checkCalls = 0;
  std::int32_t checkFinite = 0;
  std::int32_t backend = 0;
};
SettingsRecord settingsRecord(const Options& options);

// MismatchError naming, for every setting that differs, which ranks hold which value.
void checkSameSettings(const std::vector<SettingsRecord>& ranks);

// MismatchError naming the ranks that made each different call (out of line: the rare case).
[[gnu::noinline, gnu::cold]] void reportCallMismatch(const RoundTransport& exchange);

// MismatchError naming every rank whose call differs from rank 0's, and both calls. Nearly every
// call matches, so this is inline and compares bytes: sameCall() compares every field but `flags`
// and `arrivalNs`, the header's last members, so equal leading bytes mean the same call. The message (which
// allocates) is built only on a difference. This keeps RINGSYNC_CHECK=1 cheap at 8 B.
inline void checkSameCall(const RoundTransport& exchange) {
  static_assert(offsetof(CallHeader, flags) + sizeof(CallHeader::flags) == offsetof(CallHeader, arrivalNs) &&
                    offsetof(CallHeader, arrivalNs) + sizeof(CallHeader::arrivalNs) == sizeof(CallHeader),
                "flags and arrivalNs (per-rank observations) must be the last members of CallHeader");
  for (int r = 1; r < exchange.size(); ++r)
    if (std::memcmp(&exchange.header(r), &exchange.header(0), offsetof(CallHeader, flags)) != 0)
      return reportCallMismatch(exchange);
}

// NonFiniteError naming the ranks that flagged NaN/Inf in their input (RINGSYNC_CHECK_FINITE).
void checkFiniteInputs(const RoundTransport& exchange);

// The same two errors from a summary of every rank's call (recursive doubling), with the same
// messages as from a round where the summary can name every rank (call_summary.h).
[[gnu::noinline, gnu::cold]] void reportSummaryMismatch(const CallSummary& summary);
[[gnu::noinline, gnu::cold]] void reportSummaryNonFinite(const CallSummary& summary);

// Told every rank's fingerprint after each first round (before the check), to read the arrival
// times the fingerprints carry (call_tracer.h).
class ArrivalObserver {
 public:
  virtual void observe(const RoundTransport& round) noexcept = 0;
  // The same from the summary of an algorithm without a round (recursive doubling): who came last
  // and how long the others waited, not every rank's time.
  virtual void observe(const CallSummary& summary) noexcept = 0;

 protected:
  ~ArrivalObserver() = default;
};

// The one check site: every algorithm's first round ends here (collectives/algorithm_context.h).
// Fingerprints when RINGSYNC_CHECK=1, NaN/Inf flags when RINGSYNC_CHECK_FINITE=1 (flagged ranks are
// found with a few comparisons; the error message is built only when one is set).
class FingerprintCheck final : public CallCheck {
 public:
  FingerprintCheck(bool checkCalls, bool checkFinite) : checkCalls_(checkCalls), checkFinite_(checkFinite) {}
  void observeArrivals(ArrivalObserver* observer) { arrivals_ = observer; }
  void afterFirstRound(const RoundTransport& round) const override {
    if (arrivals_) arrivals_->observe(round);
    if (checkCalls_) checkSameCall(round);
    if (!checkFinite_) return;
    for (int r = 0; r < round.size(); ++r)
      if (round.header(r).flags & kFlagNonFiniteInput) return checkFiniteInputs(round);
  }
  void afterSummary(const CallSummary& summary) const override {
    if (arrivals_) arrivals_->observe(summary);
    if (checkCalls_ && summary.disagrees()) reportSummaryMismatch(summary);
    if (checkFinite_ && summary.nonFinite()) reportSummaryNonFinite(summary);
  }
  bool wantsRound() const override { return checkCalls_ || checkFinite_; }

 private:
  bool checkCalls_;
  bool checkFinite_;
  ArrivalObserver* arrivals_ = nullptr;
};

}  // namespace ringsync::detail
