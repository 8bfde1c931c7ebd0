#include "recursive_doubling.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <string>

#include "mpi_check.h"
#include "reduce_kernels.h"
#include "ringsync/errors.h"
#include "watch_paused.h"

namespace ringsync::detail {
namespace {

// Messages of [prefix | payload] up to kPartBytes go as one, longer ones in parts of kPartBytes
// (the first with the prefix), the last part shorter, empty when the length is a multiple:
// [kPartBytes][kPartBytes]...[< kPartBytes]. The receiver knows the end when a part is short, so
// the format needs no length field and a short message is exactly what it always was.
std::size_t partsOf(std::size_t messageBytes) {
  return messageBytes < RecursiveDoubling::kPartBytes ? 1 : messageBytes / RecursiveDoubling::kPartBytes + 1;
}

// What receiving a message of messageBytes takes: every part is received into a whole part's room.
std::size_t receiveRoom(std::size_t messageBytes) {
  return messageBytes < RecursiveDoubling::kPartBytes ? messageBytes
                                                      : partsOf(messageBytes) * RecursiveDoubling::kPartBytes;
}

}  // namespace

RecursiveDoubling::RecursiveDoubling(const DoublingGroup& group, DoublingBuffers& buffers, std::size_t payloadBytes)
    : group_(group), buffers_(buffers), payloadBytes_(payloadBytes) {
  buffers_.message.reserve(kPrefixBytes + payloadBytes);
}

void RecursiveDoubling::run(const CallHeader& mine, CallSummary& summary, std::size_t count, DataType type, ReduceOp op,
                            Deadline& deadline) {
  mine_ = mine;
  summary_ = &summary;
  count_ = count;
  type_ = type;
  op_ = op;
  const int m = group_.members, me = group_.member;
  if (m == 1) return;
  int p = 1;
  while (p * 2 <= m) p *= 2;
  const int extras = m - p;
  if (me >= p) {  // folded into member me - p, which sends the result back
    exchange(me - p, true, true, Combine::kTake, deadline);
    return;
  }
  if (me < extras) exchange(me + p, false, true, Combine::kMineFirst, deadline);
  for (int distance = 1; distance < p; distance <<= 1) {
    const int partner = me ^ distance;
    exchange(partner, true, true, me < partner ? Combine::kMineFirst : Combine::kTheirsFirst, deadline);
  }
  if (me < extras) exchange(me + p, true, false, Combine::kNone, deadline);
}

void RecursiveDoubling::exchange(int partner, bool send, bool receive, Combine combine, Deadline& deadline) {
  // Every part at once: each fits Open MPI's eager limit, so none waits for a rendezvous reply
  // (which, over a busy link, queues behind the bulk data coming the other way).
  const std::size_t messageBytes = kPrefixBytes + payloadBytes_, parts = send ? partsOf(messageBytes) : 0;
  RequestGroup requests(group_.comm, std::max<std::size_t>(parts, 1));
  std::byte* message = buffers_.message.data();
  if (send) {
    std::memcpy(message, &mine_, sizeof mine_);
    std::memcpy(message + sizeof mine_, summary_, sizeof *summary_);
  }
  try {
    if (receive) postFirstPart(partner);  // before sending: the partner's message finds it waiting
    for (std::size_t i = 0; i < parts; ++i) {
      const std::size_t begin = i * kPartBytes, bytes = std::min(kPartBytes, messageBytes - begin);
      requests.send(i, message + begin, bytes, partner, i == 0 ? kTagRecursiveDoubling : kTagRecursiveDoublingPart);
    }
    if (receive) receiveFrom(partner, deadline);
    requests.waitAll(deadline);  // the payload is combined in place below
  } catch (...) {
    const std::exception_ptr withdrawFailed = withdrawFirstPart(partner, deadline);
    // Abandoned with a send in flight (a peer in another call never receives it, or a timeout):
    // MPI may read the message when a later receive matches it, so it must keep this call's header.
    for (std::size_t i = 0; i < parts; ++i)
      if (!requests.test(i)) {
        buffers_.message.abandon();
        break;
      }
    // Parts of the partner's message may be left behind, with no header to tell them from a later
    // call's: the communicator must be aborted. A ringsync error in flight (a timeout naming the
    // late ranks, an MPI error) aborts it already and says more; the signal that a peer took
    // another algorithm would not (the caller goes on to meet that peer), so the withdrawal's
    // failure goes up in its place.
    if (withdrawFailed && !handlingStdException()) std::rethrow_exception(withdrawFailed);
    throw;
  }
  if (!receive) return;
  if (combine == Combine::kTake) {
    *summary_ = received_;  // the whole group's, this member's own calls included
  } else {
    summary_->merge(received_);
  }
  // Once ranks are known to be in different calls the data means nothing: only the verdict
  // travels on (the caller raises when every member has it).
  if (combine == Combine::kNone || summary_->disagrees()) return;
  if (receivedPayloadBytes_ != payloadBytes_)
    throw MismatchError(describeCall(mine_) + ": rank " + std::to_string(nameOf(partner)) + " sent " +
                        std::to_string(receivedPayloadBytes_) + " bytes for the same call, expected " +
                        std::to_string(payloadBytes_));
  const std::byte* theirs = buffers_.incoming.data() + kPrefixBytes;
  switch (combine) {
    case Combine::kMineFirst: reduceElements(payload(), payload(), theirs, count_, type_, op_); break;
    case Combine::kTheirsFirst: reduceElements(payload(), theirs, payload(), count_, type_, op_); break;
    case Combine::kTake:
      if (payloadBytes_ > 0) std::memcpy(payload(), theirs, payloadBytes_);
      break;
    case Combine::kNone: break;
  }
}

// The receive of the partner's first part is posted before this member sends, as MPI's own
// recursive doubling does: the message is then matched as it arrives instead of being queued as
// unexpected, probed and copied again (2 hosts x 1 rank, 8 B-512 B: 5-10% faster; RESULTS.md
// section 13). Any first part fits: no part is longer than kPartBytes, whatever call the partner
// is in.
void RecursiveDoubling::postFirstPart(int partner) {
  ScratchBuffer& incoming = buffers_.incoming;
  incoming.reserve(std::max(kPartBytes, receiveRoom(kPrefixBytes + payloadBytes_)));
  RINGSYNC_CHECK_MPI(MPI_Irecv(incoming.data(), static_cast<int>(kPartBytes), MPI_BYTE, partner, kTagRecursiveDoubling,
                               group_.comm, &firstPart_));
}

// Polls the posted first part to completion under the deadline.
MPI_Status RecursiveDoubling::waitForFirstPart(int partner, Deadline& deadline) {
  MPI_Status status;
  for (;;) {
    int done = 0;
    RINGSYNC_CHECK_MPI(MPI_Test(&firstPart_, &done, &status));
    if (done) break;
    deadline.idle([&] { return std::vector<int>{partner}; });
  }
  deadline.progressed();
  return status;
}

// A message an abandoned call left behind is dropped, its parts too, and the receive posted again.
void RecursiveDoubling::receiveFrom(int partner, Deadline& deadline) {
  for (;;) {
    const MPI_Status status = waitForFirstPart(partner, deadline);
    int bytes = 0;
    RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
    std::size_t messageBytes = 0;
    {
      // From here on the whole message is taken, its later parts too (WatchPaused).
      const WatchPaused paused(deadline);
      messageBytes = receiveParts(partner, static_cast<std::size_t>(bytes), deadline);
    }
    const ScratchBuffer& incoming = buffers_.incoming;
    if (messageBytes < kPrefixBytes)
      throw MismatchError(describeCall(mine_) + ": rank " + std::to_string(nameOf(partner)) + " sent a " +
                          std::to_string(bytes) + "-byte message, shorter than a recursive-doubling header");
    CallHeader theirs;
    std::memcpy(&theirs, incoming.data(), sizeof theirs);
    if (theirs.sequence < mine_.sequence) {  // left behind by an abandoned earlier call
      postFirstPart(partner);
      continue;
    }
    std::memcpy(&received_, incoming.data() + sizeof theirs, sizeof received_);
    receivedPayloadBytes_ = messageBytes - kPrefixBytes;
    return;
  }
}

// The exchange is abandoned (a peer took another algorithm, a timeout, an MPI error) while the
// first part's receive may be pending: withdrawn if nothing matched it; if a first part landed, the
// message's later parts are taken now, as receiveFrom would (they carry no header: one left behind
// would be read as a later call's part). Returns what cut that short (the deadline, an MPI error),
// null when nothing is left behind; the caller raises it in place of the error in flight.
std::exception_ptr RecursiveDoubling::withdrawFirstPart(int partner, Deadline& deadline) noexcept {
  if (firstPart_ == MPI_REQUEST_NULL) return nullptr;
  try {
    const WatchPaused paused(deadline);
    RINGSYNC_CHECK_MPI(MPI_Cancel(&firstPart_));
    // At once when nothing matched it; a matched part completes as its data lands.
    MPI_Status status = waitForFirstPart(partner, deadline);
    int cancelled = 0, bytes = 0;
    RINGSYNC_CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    if (cancelled) return nullptr;
    RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
    receiveParts(partner, static_cast<std::size_t>(bytes), deadline);
    return nullptr;
  } catch (...) {
    // A receive still pending keeps its memory.
    if (firstPart_ != MPI_REQUEST_NULL) {
      MPI_Request_free(&firstPart_);
      buffers_.incoming.abandon();
    }
    return std::current_exception();
  }
}

// After a first part of firstBytes: takes the message's other parts, into `incoming` behind it
// while there is room (receiveRoom of this call's own message: a partner in another call may send
// more, received into `spare` and dropped; the length tells the caller). Returns the whole length.
std::size_t RecursiveDoubling::receiveParts(int partner, std::size_t firstBytes, Deadline& deadline) {
  std::size_t total = firstBytes;
  if (firstBytes < kPartBytes) return total;
  ScratchBuffer& incoming = buffers_.incoming;
  RequestGroup requests(group_.comm, 1);
  for (;;) {
    const bool fits = total + kPartBytes <= incoming.size();
    if (!fits) buffers_.spare.reserve(kPartBytes);
    requests.recv(0, fits ? incoming.data() + total : buffers_.spare.data(), kPartBytes, partner,
                  kTagRecursiveDoublingPart);
    try {
      requests.wait(0, deadline);
    } catch (...) {
      // The receive may still complete into this memory: leave it to MPI.
      incoming.abandon();
      buffers_.spare.abandon();
      throw;
    }
    deadline.progressed();
    const std::size_t bytes = requests.receivedBytes(0);
    total += bytes;
    if (bytes < kPartBytes) return total;
  }
}

int RecursiveDoubling::nameOf(int member) const {
  if (group_.globalRanks == nullptr || member < 0 || static_cast<std::size_t>(member) >= group_.globalRanks->size())
    return member;
  return (*group_.globalRanks)[static_cast<std::size_t>(member)];
}

}  // namespace ringsync::detail
