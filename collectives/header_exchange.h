// One round in which every rank sends its CallHeader, optionally followed by a small payload, to
// every other rank, and receives theirs: n-1 messages each way, latency one alpha. When every
// rank of the communicator is on this node the round goes through shared memory instead
// (SharedSlots): each rank writes its slot and publishes the round number; peers read in place.
//
// It is both the consistency check (every rank sees every rank's fingerprint, so every rank
// reaches the same verdict and can name the same culprits) and the small-message transport:
// the direct all-reduce, small broadcasts and the barrier carry their data in it.
#pragma once

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
#include "transport.h"

namespace ringsync::detail {

// A piece of a round's payload: the pieces are sent back to back, as one payload.
struct PayloadPiece {
  const void* data = nullptr;
  std::size_t bytes = 0;
};

class HeaderExchange {
 public:
  // `maxPayloadBytes` bounds what any rank may attach; receive slots are sized for it up front.
  // Point-to-point rounds only.
  HeaderExchange(int rank, int size, std::size_t maxPayloadBytes);
  // Collective over `comm` (the communicator every round will use): shared-memory rounds when all
  // of its ranks are on this node, point-to-point otherwise, with payloads of at most
  // `sharedPayloadBytes` or `pointToPointPayloadBytes` (point-to-point slots are pre-touched per
  // peer and per round, so they are sized for what is really sent that way).
  HeaderExchange(MPI_Comm comm, int rank, int size, std::size_t sharedPayloadBytes,
                 std::size_t pointToPointPayloadBytes);
  ~HeaderExchange();
  HeaderExchange(const HeaderExchange&) = delete;
  HeaderExchange& operator=(const HeaderExchange&) = delete;

  // Sends [mine | payload] to every peer and receives every peer's. Blocks under `deadline`.
  void run(MPI_Comm comm, const CallHeader& mine, const void* payload, std::size_t payloadBytes,
           Deadline& deadline);
  // run() in two halves, so that a caller can start other transfers while the headers travel.
  // Every call must pass the same `comm` (receives for the next round stay posted on it between
  // calls, and are cancelled when the exchange is destroyed).
  void begin(MPI_Comm comm, const CallHeader& mine, const void* payload, std::size_t payloadBytes);
  void complete(Deadline& deadline);
  // run() with a payload gathered from several pieces (copied into the slot back to back).
  template <std::size_t N>
  void run(MPI_Comm comm, const CallHeader& mine, const std::array<PayloadPiece, N>& pieces, Deadline& deadline) {
    beginPieces(comm, mine, pieces.data(), N);
    complete(deadline);
  }

  // After run(): what rank `r` sent. For the own rank, a copy of what this rank attached (so an
  // in-place caller may overwrite its buffer while still reading its own contribution here).
  const CallHeader& header(int r) const { return *reinterpret_cast<const CallHeader*>(slot(r)); }
  const std::byte* payload(int r) const { return slot(r) + sizeof(CallHeader); }
  std::size_t payloadBytes(int r) const { return payloadBytes_[static_cast<std::size_t>(r)]; }

  std::size_t maxPayloadBytes() const { return maxPayloadBytes_; }
  int size() const { return size_; }
  bool sharedMemory() const { return shared_ != nullptr; }

 private:
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
  void beginPieces(MPI_Comm comm, const CallHeader& mine, const PayloadPiece* pieces, std::size_t count);
  void arm(Round& round);
  void beginPointToPoint(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count);
  void completePointToPoint(Deadline& deadline);
  void discardEarlyRingSend(Deadline& deadline);

  // Shared-memory rounds. Rank r's region: one cache line with the last round it published, then
  // two [payload size (one line) | header | payload] slots used by alternate rounds. A rank reuses
  // a slot two rounds later, when every peer has published the round in between and so has
  // finished reading it.
  static constexpr std::size_t kLineBytes = 64;
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

  int rank_;
  int size_;
  std::size_t maxPayloadBytes_;
  std::size_t slotBytes_;
  Round rounds_[2];
  int next_ = 0;  // the round begin() uses
  int last_ = 0;  // the round header()/payload() read
  std::vector<std::size_t> payloadBytes_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<SharedSlots> shared_;  // null: point-to-point rounds
  std::uint64_t sharedRound_ = 0;        // the round this rank last published
};

}  // namespace ringsync::detail
