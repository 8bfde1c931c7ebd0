// For algorithms with no whole-communicator round of their own (the butterfly's, butterfly.h): a
// peer that took another algorithm for the same call (its count crossed a threshold, another
// collective) starts with a round on the whole communicator, which this rank would never join.
// While the algorithm waits, the watch looks for that round and ends the wait by throwing
// PeerTookAnotherAlgorithm; the algorithm then takes back what it began and calls joinTheirRound,
// where every rank's call is checked and MismatchError raised on every rank, as every algorithm's
// first round does. The recursive-doubling all-reduce uses the same watch.
#pragma once

#include "algorithm_context.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

// Not a std::exception: the message exchanges tell it from a ringsync error (summary_messages.cc).
struct PeerTookAnotherAlgorithm {};

class AnotherAlgorithmWatch final : public IdleWatcher {
 public:
  explicit AnotherAlgorithmWatch(AlgorithmContext& context) : context_(context) {
    context_.deadline.watchWhileIdle(this);
  }
  ~AnotherAlgorithmWatch() { context_.deadline.watchWhileIdle(nullptr); }
  AnotherAlgorithmWatch(const AnotherAlgorithmWatch&) = delete;
  AnotherAlgorithmWatch& operator=(const AnotherAlgorithmWatch&) = delete;
  void poll() override {
    if (context_.rounds.peerBeganRound(context_.header.sequence)) throw PeerTookAnotherAlgorithm{};
  }

 private:
  AlgorithmContext& context_;
};

// The peer's algorithm started with a round on the whole communicator: meet it there, where the
// caller's check names every rank's call on every rank.
[[noreturn]] inline void joinTheirRound(AlgorithmContext& context) {
  context.rounds.run(context.header, nullptr, 0, context.deadline);
  firstRoundDone(context);
  throw MismatchError(
      describeCall(context.header) +
      ": a peer took another algorithm for this call (ranks disagree; RINGSYNC_CHECK=1 names the calls)");
}

// Every rank holds the same summary when the butterfly ends, so every rank raises the same error or
// none does.
inline void raiseOnDisagreement(const AlgorithmContext& context, const CallSummary& summary) {
  context.check.afterSummary(summary);
  if (summary.disagrees())  // RINGSYNC_CHECK=0: the data cannot be combined all the same
    throw MismatchError(describeCall(context.header) + ": ranks made different calls (RINGSYNC_CHECK=1 names them)");
}

}  // namespace ringsync::detail
