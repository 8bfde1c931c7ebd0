// A round: every rank sends a CallHeader, optionally followed by a payload, to every other rank and
// receives theirs -- n-1 messages each way, latency one alpha. When every rank of the communicator
// is on this node a round goes through shared memory instead (SharedSlots): each rank writes its
// slot and publishes the round number; peers read in place, with no MPI message at all.
//
// Every collective's first round carries the call fingerprints (so every rank sees every rank's
// header and reaches the same verdict, collectives/algorithm_context.h); round-based algorithms
// (direct, split, the barrier) carry their data in the same rounds.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <mpi.h>

#include "call_header.h"
#include "scratch_buffer.h"
#include "shared_slots.h"
#include "streaming_copy.h"
#include "transport.h"

namespace ringsync::detail {

// A piece of a round's payload: the pieces are sent back to back, as one payload.
struct PayloadPiece {
  const void* data = nullptr;
  std::size_t bytes = 0;
};

// The most a rank may attach to a round, by the way the round travels (the caller's policy).
struct RoundCapacity {
  std::size_t sharedMemoryBytes = 0;
  std::size_t pointToPointBytes = 0;
};

class RoundTransport {
 public:
  // Collective over `comm` (the communicator every round uses): shared-memory rounds when all of
  // its ranks are on this node, point-to-point otherwise, with payloads of at most the capacity
  // for that mode (point-to-point slots are pre-touched per peer and per round, so they are sized
  // for what is really sent that way). Where /dev/shm cannot hold the shared-memory capacity, the
  // largest of its halves down to kSmallestSharedPayloadBytes that fits, else point-to-point
  // (shared_slots.h). Every rank of `comm` ends with the same mode and the same maxPayloadBytes().
  RoundTransport(MPI_Comm comm, int rank, int size, const RoundCapacity& capacity);
  ~RoundTransport();
  RoundTransport(const RoundTransport&) = delete;
  RoundTransport& operator=(const RoundTransport&) = delete;

  // Sends [mine | payload] to every peer and receives every peer's. Blocks under `deadline`.
  void run(const CallHeader& mine, const void* payload, std::size_t payloadBytes, Deadline& deadline) {
    const PayloadPiece piece{payload, payloadBytes};
    begin(mine, &piece, 1);
    complete(deadline);
  }
  template <std::size_t N>
  void run(const CallHeader& mine, const std::array<PayloadPiece, N>& pieces, Deadline& deadline) {
    begin(mine, pieces.data(), N);
    complete(deadline);
  }
  // run() in two halves, so that a caller can start other transfers while the headers travel.
  void begin(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count);
  void complete(Deadline& deadline);

  // After a round: what rank `r` sent. For the own rank, a copy of what this rank attached (so an
  // in-place caller may overwrite its buffer while still reading its own contribution here).
  const CallHeader& header(int r) const { return *reinterpret_cast<const CallHeader*>(slot(r)); }
  const std::byte* payload(int r) const { return slot(r) + sizeof(CallHeader); }
  std::size_t payloadBytes(int r) const { return payloadBytes_[static_cast<std::size_t>(r)]; }

  // Every rank's payload was `expectedBytes(r)` bytes; otherwise MismatchError naming the rank (a
  // peer in another call sent another size: refused rather than read past its end, also with
  // RINGSYNC_CHECK=0). Inline: a few comparisons per call; the message is built out of line.
  template <typename ExpectedBytes> void requirePayloadBytes(ExpectedBytes&& expectedBytes) const {
    for (int r = 0; r < size_; ++r)
      if (payloadBytes(r) != expectedBytes(r)) reportPayloadBytes(r, expectedBytes(r));
  }

  // Whether a peer has begun a round for call number `sequence` that this rank has not joined:
  // for an algorithm that exchanges no round, a sign that the peer took another algorithm for
  // this call (recursive_doubling_allreduce.h). Takes nothing off the wire: a round that did
  // arrive stays for this rank's next round.
  bool peerBeganRound(std::uint64_t sequence);
  // Takes back the shared-memory round this rank began last, before every peer has read it (a
  // call abandoned for a peer that never joined it), so that the next round is numbered alike on
  // every rank. Shared-memory rounds only; the caller guarantees no peer still reads the slot.
  void withdrawSharedRound();

  std::size_t maxPayloadBytes() const { return maxPayloadBytes_; }
  // Lowers what a round may carry to `bytes` (never raises it): for a caller that agreed on one
  // capacity with ranks beyond this communicator (node_hierarchy.cc). Every rank of the
  // communicator must pass the same value.
  void limitPayloadBytes(std::size_t bytes) { maxPayloadBytes_ = std::min(maxPayloadBytes_, bytes); }
  int size() const { return size_; }
  bool sharedMemory() const { return shared_ != nullptr; }

 private:
  // Shared-memory slots smaller than this are not offered when /dev/shm is short: point-to-point
  // rounds carry as much (kPointToPointSmallBytes, src/selection_constants.h), and the
  // hierarchical all-reduce needs node rounds of 64 KiB (node_hierarchy.cc).
  static constexpr std::size_t kSmallestSharedPayloadBytes = 64 * 1024;

  [[noreturn, gnu::noinline, gnu::cold]] void reportPayloadBytes(int r, std::size_t expectedBytes) const;
  bool agreeOnRounds();

  // One set of [header | payload] slots (one per rank; the own slot is what is sent) and the
  // requests that fill it. Two sets alternate: while the caller still reads the last round's
  // slots, the receives of the next round are already posted in the other set, so a peer's
  // header that arrives early lands in place instead of in MPI's unexpected-message queue.
  struct Round {
    ScratchBuffer slots;
    std::optional<RequestGroup> requests;
    bool armed = false;  // receives posted, not yet completed
  };
  std::byte* slot(Round& round, int r) { return round.slots.data() + static_cast<std::size_t>(r) * slotBytes_; }
  // The [header | payload] rank r contributed to the last round (inline: read on every call).
  const std::byte* slot(int r) const {
    if (shared_) return sharedSlot(r, sharedRound_) + kLineBytes;
    return rounds_[last_].slots.data() + static_cast<std::size_t>(r) * slotBytes_;
  }
  void arm(Round& round);
  void beginPointToPoint(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count);
  void completePointToPoint(Deadline& deadline);

  // Shared-memory rounds. Rank r's region: one cache line with the last round it published, then
  // two [payload size (one line) | header | payload] slots used by alternate rounds. A rank reuses
  // a slot two rounds later, when every peer has published the round in between and so has
  // finished reading it.
  static constexpr std::size_t kLineBytes = 64;
  // A shared round's wait lets MPI progress (completeShared) every kMpiProgressEvery idle polls
  // once it has lasted kPollsBeforeMpiProgress.
  static constexpr unsigned kPollsBeforeMpiProgress = 1024;
  static constexpr unsigned kMpiProgressEvery = 64;
  // A [header | payload] slot, rounded up to whole cache lines.
  static std::size_t slotBytesFor(std::size_t payloadBytes) {
    return (sizeof(CallHeader) + payloadBytes + kLineBytes - 1) / kLineBytes * kLineBytes;
  }
  std::size_t sharedSlotBytes() const { return kLineBytes + slotBytes_; }
  std::uint64_t* publishedRound(int r) const { return reinterpret_cast<std::uint64_t*>(shared_->region(r)); }
  std::byte* sharedSlot(int r, std::uint64_t round) const {
    return shared_->region(r) + kLineBytes + (round % 2) * sharedSlotBytes();
  }
  void beginShared(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count);
  void completeShared(Deadline& deadline);

  MPI_Comm comm_;
  int rank_;
  int size_;
  std::size_t maxPayloadBytes_;
  std::size_t slotBytes_;
  Round rounds_[2];
  int next_ = 0;  // the round begin() uses
  int last_ = 0;  // the round header()/payload() read
  std::vector<std::size_t> payloadBytes_;
  std::unique_ptr<SharedSlots> shared_;  // null: point-to-point rounds
  // Shared rounds: whether payloads go to the slot with cache-bypassing stores (streaming_copy.h).
  SharedCopyPolicy copyPolicy_{SharedCopyPolicy::modeFromEnvironment()};
  std::uint64_t sharedRound_ = 0;  // the round this rank last published
};

}  // namespace ringsync::detail
