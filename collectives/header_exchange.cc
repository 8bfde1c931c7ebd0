#include "header_exchange.h"

#include <cstring>

#include "ringsync/errors.h"

namespace ringsync::detail {

HeaderExchange::HeaderExchange(int rank, int size, std::size_t maxPayloadBytes)
    : rank_(rank), size_(size), maxPayloadBytes_(maxPayloadBytes),
      slotBytes_((sizeof(CallHeader) + maxPayloadBytes + 63) / 64 * 64),
      slots_(slotBytes_ * static_cast<std::size_t>(size)), payloadBytes_(static_cast<std::size_t>(size), 0) {}

void HeaderExchange::run(MPI_Comm comm, const CallHeader& mine, const void* payload, std::size_t payloadBytes,
                         Deadline& deadline) {
  if (payloadBytes > maxPayloadBytes_)
    throw InvalidArgument("header payload of " + std::to_string(payloadBytes) + " bytes exceeds " +
                          std::to_string(maxPayloadBytes_));
  std::byte* own = slot(rank_);
  std::memcpy(own, &mine, sizeof mine);
  if (payloadBytes > 0) std::memcpy(own + sizeof mine, payload, payloadBytes);
  payloadBytes_[static_cast<std::size_t>(rank_)] = payloadBytes;
  if (size_ == 1) return;

  // Receives first, so that incoming messages land in place rather than in MPI's unexpected queue.
  const std::size_t peers = static_cast<std::size_t>(size_ - 1);
  RequestGroup requests(comm, 2 * peers);
  std::size_t next = 0;
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    requests.recv(next++, slot(from), slotBytes_, from, kTagHeader);
  }
  for (int step = 1; step < size_; ++step) {
    const int to = (rank_ + step) % size_;
    requests.send(next++, own, sizeof mine + payloadBytes, to, kTagHeader);
  }
  requests.waitAll(deadline);

  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ - step + size_) % size_;
    const std::size_t got = requests.receivedBytes(static_cast<std::size_t>(step - 1));
    // A message shorter than a header can only come from a peer that is not speaking ringsync's
    // protocol on this communicator; report it instead of reading garbage.
    if (got < sizeof(CallHeader))
      throw MismatchError(describeCall(mine) + ": rank " + std::to_string(from) + " sent a " +
                          std::to_string(got) + "-byte header");
    payloadBytes_[static_cast<std::size_t>(from)] = got - sizeof(CallHeader);
  }
}

const CallHeader& HeaderExchange::header(int r) const {
  return *reinterpret_cast<const CallHeader*>(slot(r));
}

const std::byte* HeaderExchange::payload(int r) const { return slot(r) + sizeof(CallHeader); }

}  // namespace ringsync::detail
