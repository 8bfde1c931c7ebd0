#include "round_transport.h"

#include <sched.h>

#include <chrono>
#include <cstring>

#include "mpi_check.h"
#include "ringsync/errors.h"
#include "transport.h"

namespace ringsync::detail {

namespace {
void copyPieces(std::byte* to, const PayloadPiece* pieces, std::size_t count, bool streaming = false) {
  for (std::size_t i = 0; i < count; ++i) {
    if (pieces[i].bytes == 0) continue;
    if (streaming) {
      streamingCopy(to, static_cast<const std::byte*>(pieces[i].data), pieces[i].bytes);
    } else {
      std::memcpy(to, pieces[i].data, pieces[i].bytes);
    }
    to += pieces[i].bytes;
  }
}
}  // namespace

RoundTransport::RoundTransport(MPI_Comm comm, int rank, int size, const RoundCapacity& capacity)
    : comm_(comm),
      rank_(rank),
      size_(size),
      maxPayloadBytes_(0),
      slotBytes_(0),
      payloadBytes_(static_cast<std::size_t>(size), 0) {
  // Shared memory with the capacity asked for, or, where /dev/shm cannot hold that, half of it, a
  // quarter, ... down to kSmallestSharedPayloadBytes (the largest the segment's creator could reserve).
  std::vector<std::size_t> payloads{capacity.sharedMemoryBytes};
  while (payloads.back() / 2 >= kSmallestSharedPayloadBytes) payloads.push_back(payloads.back() / 2);
  std::vector<std::size_t> regions;
  for (std::size_t payload : payloads) regions.push_back(kLineBytes + 2 * (kLineBytes + slotBytesFor(payload)));
  shared_ = SharedSlots::create(comm, regions);
  if (shared_) {
    maxPayloadBytes_ = payloads[shared_->choice()];
    slotBytes_ = slotBytesFor(maxPayloadBytes_);
  }
  if (!agreeOnRounds()) shared_.reset();
  if (!shared_) {
    maxPayloadBytes_ = capacity.pointToPointBytes;
    slotBytes_ = slotBytesFor(maxPayloadBytes_);
    for (Round& round : rounds_) round.slots.reserve(slotBytes_ * static_cast<std::size_t>(size));
  }
}

// The algorithm every rank chooses depends on how rounds travel and on what they carry
// (algorithm_selection.h), so those must be the same on every rank. Shared memory is decided by
// the segment's creator for all; this reduction makes that hold whatever decided it, and answers
// false on every rank (point-to-point for all) when it does not.
bool RoundTransport::agreeOnRounds() {
  const unsigned long long mine[2] = {shared_ ? 1ull : 0ull, maxPayloadBytes_};
  unsigned long long range[4] = {mine[0], mine[1], ~mine[0], ~mine[1]};
  RINGSYNC_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, range, 4, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_));
  return range[0] == mine[0] && range[1] == mine[1] && ~range[2] == mine[0] && ~range[3] == mine[1];
}

RoundTransport::~RoundTransport() = default;

void RoundTransport::begin(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count) {
  std::size_t payloadBytes = 0;
  for (std::size_t i = 0; i < count; ++i) payloadBytes += pieces[i].bytes;
  if (payloadBytes > maxPayloadBytes_)
    throw InvalidArgument("round payload of " + std::to_string(payloadBytes) + " bytes exceeds " +
                          std::to_string(maxPayloadBytes_));
  payloadBytes_[static_cast<std::size_t>(rank_)] = payloadBytes;
  if (shared_) {
    beginShared(mine, pieces, count);
  } else {
    beginPointToPoint(mine, pieces, count);
  }
}

void RoundTransport::complete(Deadline& deadline) {
  if (size_ == 1) return;
  if (shared_) {
    completeShared(deadline);
  } else {
    completePointToPoint(deadline);
  }
}

void RoundTransport::reportPayloadBytes(int r, std::size_t expectedBytes) const {
  throw MismatchError(describeCall(header(r)) + ": rank " + std::to_string(r) + " sent " +
                      std::to_string(payloadBytes(r)) + " bytes, expected " + std::to_string(expectedBytes) +
                      " (ranks disagree; RINGSYNC_CHECK=1 names the calls)");
}

bool RoundTransport::peerBeganRound(std::uint64_t sequence) {
  if (size_ == 1) return false;
  if (shared_) {
    const std::uint64_t next = sharedRound_ + 1;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || __atomic_load_n(publishedRound(r), __ATOMIC_ACQUIRE) < next) continue;
      CallHeader header;
      std::memcpy(&header, sharedSlot(r, next) + kLineBytes, sizeof header);
      if (header.sequence == sequence) return true;
    }
    return false;
  }
  // The receives of the next round are posted after every round (and here before the first), so
  // a peer's header lands in its slot; testing completes the receive, which the round then finds done.
  Round& round = rounds_[next_];
  if (!round.armed) arm(round);
  for (int step = 1; step < size_; ++step) {
    const auto request = static_cast<std::size_t>(step - 1);
    if (!round.requests->test(request) || round.requests->receivedBytes(request) < sizeof(CallHeader)) continue;
    CallHeader header;
    std::memcpy(&header, slot(round, (rank_ - step + size_) % size_), sizeof header);
    if (header.sequence == sequence) return true;
  }
  return false;
}

void RoundTransport::withdrawSharedRound() {
  if (!shared_ || sharedRound_ == 0) return;
  --sharedRound_;
  __atomic_store_n(publishedRound(rank_), sharedRound_, __ATOMIC_RELEASE);
}

// ---- point-to-point rounds ----------------------------------------------------------------------

// Receives first (here, ahead of the round), so that incoming messages land in place.
void RoundTransport::arm(Round& round) {
  if (!round.requests) round.requests.emplace(comm_, 2 * static_cast<std::size_t>(size_ - 1));
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    round.requests->recv(static_cast<std::size_t>(step - 1), slot(round, from), slotBytes_, from, kTagHeader);
  }
  round.armed = true;
}

void RoundTransport::beginPointToPoint(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count) {
  Round& round = rounds_[next_];
  std::byte* own = slot(round, rank_);
  std::memcpy(own, &mine, sizeof mine);
  copyPieces(own + sizeof mine, pieces, count);
  const std::size_t payloadBytes = payloadBytes_[static_cast<std::size_t>(rank_)];
  last_ = next_;
  if (size_ == 1) return;
  if (!round.armed) arm(round);
  for (int step = 1; step < size_; ++step) {
    const int to = (rank_ + step) % size_;
    round.requests->send(static_cast<std::size_t>(size_ - 2 + step), own, sizeof mine + payloadBytes, to, kTagHeader);
  }
}

void RoundTransport::completePointToPoint(Deadline& deadline) {
  Round& round = rounds_[last_];
  round.requests->waitAll(deadline);
  round.armed = false;
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    const std::size_t got = round.requests->receivedBytes(static_cast<std::size_t>(step - 1));
    // A message shorter than a header can only come from a peer that is not speaking ringsync's
    // protocol on this communicator; report it instead of reading garbage.
    if (got < sizeof(CallHeader))
      throw MismatchError(describeCall(header(rank_)) + ": rank " + std::to_string(from) + " sent a " +
                          std::to_string(got) + "-byte header");
    payloadBytes_[static_cast<std::size_t>(from)] = got - sizeof(CallHeader);
  }
  next_ = 1 - last_;
  arm(rounds_[next_]);
}

// ---- shared-memory rounds -----------------------------------------------------------------------

void RoundTransport::beginShared(const CallHeader& mine, const PayloadPiece* pieces, std::size_t count) {
  const std::uint64_t round = ++sharedRound_;
  std::byte* own = sharedSlot(rank_, round);
  const std::uint64_t size = payloadBytes_[static_cast<std::size_t>(rank_)];
  std::memcpy(own, &size, sizeof size);
  std::memcpy(own + kLineBytes, &mine, sizeof mine);
  const bool streamed = copyPolicy_.streams(round, size);
  if (streamed || !copyPolicy_.measures(size)) {
    copyPieces(own + kLineBytes + sizeof mine, pieces, count, streamed);
  } else {
    const auto start = std::chrono::steady_clock::now();
    copyPieces(own + kLineBytes + sizeof mine, pieces, count, false);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    copyPolicy_.recordPlainCopy(size, ns);
  }
  // Release: a peer that sees the new round number also sees the slot written above.
  __atomic_store_n(publishedRound(rank_), round, __ATOMIC_RELEASE);
}

void RoundTransport::completeShared(Deadline& deadline) {
  const std::uint64_t round = sharedRound_;
  unsigned polls = 0;
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    while (__atomic_load_n(publishedRound(from), __ATOMIC_ACQUIRE) < round) {
      // Spinning on memory never enters MPI, so nothing else yields the CPU for us: with more
      // ranks than CPUs, the peer we wait for may need this one.
      if (shared_->oversubscribed()) sched_yield();
      // Nor does MPI progress: sends this rank left in flight (a recursive-doubling exchange cut
      // short when a peer took another algorithm) must still reach the partner that takes them
      // before it comes to this round. Without single-copy shared memory (Open MPI's vader with
      // no CMA, as in many containers) a long message moves only while its sender calls MPI:
      // the partner waited out the deadline (RESULTS.md section 9, second session). A probe for a
      // tag nobody sends: Open MPI progresses only when a probe finds nothing. Not in the first
      // polls: a small call on one node finds its peers within them, and a probe in every such
      // wait cost 8 B all-reduces at np=2 ~14% (0.50 -> 0.57 us).
      if (++polls >= kPollsBeforeMpiProgress && polls % kMpiProgressEvery == 0) {
        int found = 0;
        RINGSYNC_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kTagNeverSent, comm_, &found, MPI_STATUS_IGNORE));
      }
      deadline.idle([&] {
        std::vector<int> late;
        for (int r = 0; r < size_; ++r)
          if (__atomic_load_n(publishedRound(r), __ATOMIC_ACQUIRE) < round) late.push_back(r);
        return late;
      });
    }
    deadline.progressed();
    std::uint64_t size = 0;
    std::memcpy(&size, sharedSlot(from, round), sizeof size);
    // The slot holds at most maxPayloadBytes_ (a peer with other settings may claim more).
    if (size > maxPayloadBytes_)
      throw MismatchError(describeCall(header(rank_)) + ": rank " + std::to_string(from) + " published a " +
                          std::to_string(size) + "-byte payload, more than the " + std::to_string(maxPayloadBytes_) +
                          " bytes its slot holds (ranks run ringsync builds with different limits)");
    payloadBytes_[static_cast<std::size_t>(from)] = static_cast<std::size_t>(size);
  }
}

}  // namespace ringsync::detail
