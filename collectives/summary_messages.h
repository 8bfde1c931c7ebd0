// Point-to-point messages that carry the call summary, in recursive doubling's format
// (recursive_doubling.h): [CallHeader | CallSummary | payload], sent in parts of at most
// kPartBytes (Open MPI's eager limit over TCP), the first on kTagRecursiveDoubling, the others on
// kTagRecursiveDoublingPart, the last part shorter (empty when the length is a whole number of
// parts). Sharing the format and the tags is what lets a rank in recursive doubling and a rank in
// a butterfly (butterfly.h) that meet in a mismatched call read each other's messages, merge the
// summaries and reach the same verdict, and lets either drop a message an abandoned call left
// behind (recognised by its sequence number).
//
// Unlike recursive doubling, whose messages always go from and into its own buffers whole, a
// butterfly's payload changes size every step and may come from or go to other memory: the first
// part is staged (the prefix and the payload's first bytes, in DoublingBuffers::message), the
// others go straight from the payload's memory; received, the first part lands in
// DoublingBuffers::incoming and the others where the caller says. Up to kWindow parts are in
// flight each way, and each part is handed to the caller as it lands, so that it is reduced while
// the next ones are in transit. The parts after the first are received only once the first part
// has shown the message belongs to this call; a message of another call (a peer in a mismatched
// call) is taken whole into DoublingBuffers::spare and dropped, its summary merged.
#pragma once

#include <cstddef>
#include <exception>

#include <mpi.h>

#include "call_summary.h"
#include "recursive_doubling.h"
#include "transport.h"

namespace ringsync::detail {

// What the caller does with the bytes [begin, end) of a received payload, found at `data` (the
// parts after the first land where the caller asked, so `data` is then that memory).
class PartSink {
 public:
  virtual void landed(std::size_t begin, std::size_t end, const std::byte* data) = 0;

 protected:
  ~PartSink() = default;
};

template <typename Fn> class PartFn final : public PartSink {
 public:
  explicit PartFn(Fn fn) : fn_(fn) {}
  void landed(std::size_t begin, std::size_t end, const std::byte* data) override { fn_(begin, end, data); }

 private:
  Fn fn_;
};

class SummaryMessages {
 public:
  static constexpr std::size_t kPartBytes = RecursiveDoubling::kPartBytes;
  static constexpr std::size_t kPrefixBytes = RecursiveDoubling::kPrefixBytes;
  // Parts in flight per direction: 16 of 63 KiB keep a link busy without a long queue (the ring's
  // depth across nodes, options.h).
  static constexpr std::size_t kWindow = 16;

  // `summary` is this member's so far; every message received is merged into it.
  SummaryMessages(const DoublingGroup& group, DoublingBuffers& buffers, const CallHeader& mine, CallSummary& summary,
                  Deadline& deadline);

  struct Outgoing {
    const std::byte* payload = nullptr;
    std::size_t bytes = 0;
  };
  struct Incoming {
    std::size_t bytes = 0;         // the payload expected from a partner in this call
    std::byte* payload = nullptr;  // where parts after the first go; null: DoublingBuffers::incoming
    PartSink* sink = nullptr;      // told of every part of this call's message as it lands (null: nobody)
    // What the partner's summary does to this member's: merged (the usual), taken in its place (the
    // whole group's, for a folded member's last message), or left (after the check, where merging
    // the same ranks again would count them twice).
    enum class Summary { kMerge, kTake, kLeave } summary = Summary::kMerge;
  };
  enum class Received { kNothing, kThisCall, kDropped };

  // Sends `out` to `partner` (when `send`; only the prefix once the summary disagrees: the data
  // means nothing then) and receives its message (when `receive`). kDropped: the partner is in
  // another call, or the summary (merged with the partner's) shows ranks in different calls; the
  // message was taken whole into DoublingBuffers::spare and dropped, nothing reached `in`.
  // Throws on a timeout, an MPI error, or a signal from the deadline's watcher.
  Received exchange(int partner, bool send, Outgoing out, bool receive, const Incoming& in);

  // Whether a failed exchange left sends from the payload's memory or receives into the caller's
  // memory in flight: the caller must then leave that memory to MPI (ScratchBuffer::abandon), as
  // this object does with its own.
  bool callerMemoryLeftToMpi() const { return callerMemoryLeftToMpi_; }

 private:
  class Sends;
  void stage(const Outgoing& out);
  void postFirstPart(int partner, std::size_t payloadBytes);
  std::size_t waitForFirstPart(int partner, Sends* sends);
  Received receive(int partner, const Incoming& in, Sends& sends);
  void receiveRest(int partner, const Incoming& in, std::size_t firstBytes, Sends& sends);
  void dropRest(int partner, std::size_t firstBytes);
  std::exception_ptr withdrawFirstPart(int partner) noexcept;
  int nameOf(int member) const;

  DoublingGroup group_;
  DoublingBuffers& buffers_;
  CallHeader mine_;
  CallSummary& summary_;
  Deadline& deadline_;
  MPI_Request firstPart_ = MPI_REQUEST_NULL;
  bool callerMemoryLeftToMpi_ = false;
};

}  // namespace ringsync::detail
