#include "header_exchange.h"

#include <cstring>

#include "mpi_check.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

HeaderExchange::HeaderExchange(int rank, int size, std::size_t maxPayloadBytes)
    : rank_(rank), size_(size), maxPayloadBytes_(maxPayloadBytes),
      slotBytes_((sizeof(CallHeader) + maxPayloadBytes + 63) / 64 * 64),
      payloadBytes_(static_cast<std::size_t>(size), 0) {
  for (Round& round : rounds_) round.slots.reserve(slotBytes_ * static_cast<std::size_t>(size));
}

void HeaderExchange::run(MPI_Comm comm, const CallHeader& mine, const void* payload, std::size_t payloadBytes,
                         Deadline& deadline) {
  begin(comm, mine, payload, payloadBytes);
  complete(deadline);
}

// Receives first (here, ahead of the round), so that incoming messages land in place.
void HeaderExchange::arm(Round& round) {
  if (!round.requests) round.requests.emplace(comm_, 2 * static_cast<std::size_t>(size_ - 1));
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    round.requests->recv(static_cast<std::size_t>(step - 1), slot(round, from), slotBytes_, from, kTagHeader);
  }
  round.armed = true;
}

void HeaderExchange::begin(MPI_Comm comm, const CallHeader& mine, const void* payload, std::size_t payloadBytes) {
  if (payloadBytes > maxPayloadBytes_)
    throw InvalidArgument("header payload of " + std::to_string(payloadBytes) + " bytes exceeds " +
                          std::to_string(maxPayloadBytes_));
  Round& round = rounds_[next_];
  std::byte* own = slot(round, rank_);
  std::memcpy(own, &mine, sizeof mine);
  if (payloadBytes > 0) std::memcpy(own + sizeof mine, payload, payloadBytes);
  payloadBytes_[static_cast<std::size_t>(rank_)] = payloadBytes;
  last_ = next_;
  if (size_ == 1) return;
  if (comm != comm_) {
    for (Round& r : rounds_) r.requests.reset();  // receives posted on another communicator
    for (Round& r : rounds_) r.armed = false;
    comm_ = comm;
  }
  if (!round.armed) arm(round);
  for (int step = 1; step < size_; ++step) {
    const int to = (rank_ + step) % size_;
    round.requests->send(static_cast<std::size_t>(size_ - 2 + step), own, sizeof mine + payloadBytes, to, kTagHeader);
  }
}

void HeaderExchange::complete(Deadline& deadline) {
  if (size_ == 1) return;
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
  const int left = (rank_ - 1 + size_) % size_;
  if ((header(left).flags & kFlagEarlyRingSend) && !(header(rank_).flags & kFlagEarlyRingSend))
    discardEarlyRingSend(deadline);
}

// The left neighbour started a ring all-reduce early, but this rank is in another call and posted
// no receive for it: take the message off the wire (any size) so it cannot match a later call.
void HeaderExchange::discardEarlyRingSend(Deadline& deadline) {
  const int left = (rank_ - 1 + size_) % size_;
  MPI_Message message = MPI_MESSAGE_NULL;
  MPI_Status status;
  int found = 0;
  while (true) {
    RINGSYNC_CHECK_MPI(MPI_Improbe(left, kTagRing, comm_, &found, &message, &status));
    if (found) break;
    deadline.idle([left] { return std::vector<int>{left}; });
  }
  int bytes = 0;
  RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
  std::vector<std::byte> sink(static_cast<std::size_t>(bytes) + 1);
  RINGSYNC_CHECK_MPI(MPI_Mrecv(sink.data(), bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE));
  deadline.progressed();
}

const CallHeader& HeaderExchange::header(int r) const { return *reinterpret_cast<const CallHeader*>(slot(r)); }

const std::byte* HeaderExchange::payload(int r) const { return slot(r) + sizeof(CallHeader); }

}  // namespace ringsync::detail
