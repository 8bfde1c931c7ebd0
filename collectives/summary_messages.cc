#include "summary_messages.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "mpi_check.h"
#include "ringsync/errors.h"
#include "watch_paused.h"

namespace ringsync::detail {
namespace {

constexpr std::size_t kPart = SummaryMessages::kPartBytes;
constexpr std::size_t kPrefix = SummaryMessages::kPrefixBytes;
constexpr std::size_t kWindow = SummaryMessages::kWindow;
static_assert(kPart % 8 == 0 && kPrefix % 8 == 0, "every part must hold whole elements of every type");

// As recursive_doubling.cc cuts a message: [kPart][kPart]...[< kPart].
std::size_t partsOf(std::size_t messageBytes) { return messageBytes < kPart ? 1 : messageBytes / kPart + 1; }
std::size_t partBytes(std::size_t messageBytes, std::size_t part) {
  return std::min(kPart, messageBytes - part * kPart);
}
std::size_t receiveRoom(std::size_t messageBytes) {
  return messageBytes < kPart ? messageBytes : partsOf(messageBytes) * kPart;
}

}  // namespace

// The parts of one message: the first from the staging buffer, the others from the payload's own
// memory, at most kWindow in flight (each fits the eager limit: none waits for a rendezvous reply).
class SummaryMessages::Sends {
 public:
  Sends(MPI_Comm comm, int partner, const std::byte* staged, const std::byte* payload, std::size_t messageBytes)
      : requests_(comm, kWindow),
        partner_(partner),
        staged_(staged),
        payload_(payload),
        bytes_(messageBytes),
        parts_(messageBytes == 0 ? 0 : partsOf(messageBytes)) {}

  // Completes what has completed, in order, and posts what the window allows.
  bool pump() {
    bool progressed = false;
    while (completed_ < posted_ && requests_.test(completed_ % kWindow)) {
      ++completed_;
      progressed = true;
    }
    while (posted_ < parts_ && posted_ < completed_ + kWindow) {
      const std::size_t i = posted_++;
      const std::byte* data = i == 0 ? staged_ : payload_ + (i * kPart - kPrefix);
      requests_.send(i % kWindow, data, partBytes(bytes_, i), partner_,
                     i == 0 ? kTagRecursiveDoubling : kTagRecursiveDoublingPart);
      progressed = true;
    }
    return progressed;
  }
  bool done() const { return completed_ == parts_; }
  void finish(Deadline& deadline) {
    while (!done()) {
      if (pump()) {
        deadline.progressed();
      } else {
        deadline.idle([this] { return std::vector<int>{partner_}; });
      }
    }
  }

 private:
  RequestGroup requests_;
  int partner_;
  const std::byte* staged_;
  const std::byte* payload_;
  std::size_t bytes_, parts_, posted_ = 0, completed_ = 0;
};

SummaryMessages::SummaryMessages(const DoublingGroup& group, DoublingBuffers& buffers, const CallHeader& mine,
                                 CallSummary& summary, Deadline& deadline)
    : group_(group), buffers_(buffers), mine_(mine), summary_(summary), deadline_(deadline) {}

SummaryMessages::Received SummaryMessages::exchange(int partner, bool send, Outgoing out, bool receive,
                                                    const Incoming& in) {
  callerMemoryLeftToMpi_ = false;
  if (summary_.disagrees()) out.bytes = 0;
  if (send) stage(out);
  Sends sends(group_.comm, partner, buffers_.message.data(), out.payload, send ? kPrefix + out.bytes : 0);
  try {
    if (receive) postFirstPart(partner, in.payload != nullptr ? 0 : in.bytes);  // before sending, as MPI's own doubling
    sends.pump();
    const Received received = receive ? this->receive(partner, in, sends) : Received::kNothing;
    sends.finish(deadline_);
    return received;
  } catch (...) {
    const std::exception_ptr withdrawFailed = receive ? withdrawFirstPart(partner) : nullptr;
    // A send still in flight may be read by MPI when a later receive matches it: its memory must
    // keep this call's message (the staged first part here; the payload's memory is the caller's).
    if (!sends.done()) {
      buffers_.message.abandon();
      callerMemoryLeftToMpi_ = callerMemoryLeftToMpi_ || out.bytes + kPrefix > kPart;
    }
    // Parts of the partner's message may be left behind: a ringsync error in flight (a timeout, an
    // MPI error) aborts the communicator and says more; the watcher's signal would not, so the
    // withdrawal's failure goes up in its place.
    if (withdrawFailed && !handlingStdException()) std::rethrow_exception(withdrawFailed);
    throw;
  }
}

// The first part: the prefix and as much of the payload as fits behind it.
void SummaryMessages::stage(const Outgoing& out) {
  buffers_.message.reserve(kPart);
  std::byte* staged = buffers_.message.data();
  std::memcpy(staged, &mine_, sizeof mine_);
  std::memcpy(staged + sizeof mine_, &summary_, sizeof summary_);
  const std::size_t head = std::min(kPart - kPrefix, out.bytes);
  if (head > 0) std::memcpy(staged + kPrefix, out.payload, head);
}

// Any first part fits kPart (no part is longer, whatever call the partner is in); the room behind
// it takes the rest of a message received whole into `incoming`.
void SummaryMessages::postFirstPart(int partner, std::size_t payloadBytesHere) {
  buffers_.incoming.reserve(std::max(kPart, receiveRoom(kPrefix + payloadBytesHere)));
  RINGSYNC_CHECK_MPI(MPI_Irecv(buffers_.incoming.data(), static_cast<int>(kPart), MPI_BYTE, partner,
                               kTagRecursiveDoubling, group_.comm, &firstPart_));
}

std::size_t SummaryMessages::waitForFirstPart(int partner, Sends* sends) {
  MPI_Status status;
  for (;;) {
    int done = 0;
    RINGSYNC_CHECK_MPI(MPI_Test(&firstPart_, &done, &status));
    if (done) break;
    if (sends != nullptr && sends->pump()) continue;
    deadline_.idle([&] { return std::vector<int>{partner}; });
  }
  deadline_.progressed();
  int bytes = 0;
  RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
  return static_cast<std::size_t>(bytes);
}

SummaryMessages::Received SummaryMessages::receive(int partner, const Incoming& in, Sends& sends) {
  for (;;) {
    const std::size_t firstBytes = waitForFirstPart(partner, &sends);
    const std::byte* first = buffers_.incoming.data();
    if (firstBytes < kPrefix)
      throw MismatchError(describeCall(mine_) + ": rank " + std::to_string(nameOf(partner)) + " sent a " +
                          std::to_string(firstBytes) + "-byte message, shorter than a recursive-doubling header");
    CallHeader theirs;
    std::memcpy(&theirs, first, sizeof theirs);
    if (theirs.sequence < mine_.sequence) {  // left behind by an abandoned earlier call
      dropRest(partner, firstBytes);
      postFirstPart(partner, in.payload != nullptr ? 0 : in.bytes);
      continue;
    }
    CallSummary received;
    std::memcpy(&received, first + sizeof theirs, sizeof received);
    if (in.summary == Incoming::Summary::kTake) summary_ = received;  // the whole group's, this member's included
    if (in.summary == Incoming::Summary::kMerge) summary_.merge(received);
    // Another call's message has its call's length; a verdict carries no data: taken and dropped.
    if (!sameCall(theirs, mine_) || summary_.disagrees()) {
      dropRest(partner, firstBytes);
      return Received::kDropped;
    }
    receiveRest(partner, in, firstBytes, sends);
    return Received::kThisCall;
  }
}

// A message of this call whose summary agrees: its parts have the lengths this member expects (the
// same call takes the same algorithm and steps everywhere).
void SummaryMessages::receiveRest(int partner, const Incoming& in, std::size_t firstBytes, Sends& sends) {
  const std::size_t messageBytes = kPrefix + in.bytes;
  if (firstBytes != partBytes(messageBytes, 0))
    throw BackendError(describeCall(mine_) + ": rank " + std::to_string(nameOf(partner)) + " sent a first part of " +
                       std::to_string(firstBytes) + " bytes for the same call, expected " +
                       std::to_string(partBytes(messageBytes, 0)));
  PartSink* sink = in.sink;
  if (sink != nullptr && firstBytes > kPrefix)
    sink->landed(0, firstBytes - kPrefix, buffers_.incoming.data() + kPrefix);
  const std::size_t parts = partsOf(messageBytes);
  if (parts == 1) return;
  std::byte* payload = in.payload != nullptr ? in.payload : buffers_.incoming.data() + kPrefix;
  const WatchPaused paused(deadline_);
  RequestGroup requests(group_.comm, kWindow);
  std::size_t posted = 1, done = 1;
  try {
    while (done < parts) {
      for (; posted < parts && posted < done + kWindow; ++posted)
        requests.recv(posted % kWindow, payload + (posted * kPart - kPrefix), partBytes(messageBytes, posted), partner,
                      kTagRecursiveDoublingPart);
      while (!requests.test(done % kWindow))
        if (!sends.pump()) deadline_.idle([&] { return std::vector<int>{partner}; });
      deadline_.progressed();
      const std::size_t begin = done * kPart - kPrefix, bytes = partBytes(messageBytes, done);
      if (requests.receivedBytes(done % kWindow) != bytes)
        throw BackendError(describeCall(mine_) + ": rank " + std::to_string(nameOf(partner)) + " sent a part of " +
                           std::to_string(requests.receivedBytes(done % kWindow)) + " bytes, expected " +
                           std::to_string(bytes));
      if (sink != nullptr && bytes > 0) sink->landed(begin, begin + bytes, payload + begin);
      ++done;
    }
  } catch (...) {
    // Receives still pending may complete into this memory later: leave it to MPI (the caller's
    // memory is its own to leave; a failure here aborts the communicator).
    if (done < posted) {
      if (in.payload == nullptr) {
        buffers_.incoming.abandon();
      } else {
        callerMemoryLeftToMpi_ = true;
      }
    }
    throw;
  }
}

// After a first part of firstBytes of a message this member does not use: takes its other parts
// (any number: its length is another call's) into `spare`.
void SummaryMessages::dropRest(int partner, std::size_t firstBytes) {
  if (firstBytes < kPart) return;
  const WatchPaused paused(deadline_);
  buffers_.spare.reserve(kPart);
  RequestGroup requests(group_.comm, 1);
  for (;;) {
    requests.recv(0, buffers_.spare.data(), kPart, partner, kTagRecursiveDoublingPart);
    try {
      requests.wait(0, deadline_);
    } catch (...) {
      buffers_.spare.abandon();  // the receive may still complete into it
      throw;
    }
    if (requests.receivedBytes(0) < kPart) return;
  }
}

// The exchange is abandoned while the first part's receive may be pending: withdrawn if nothing
// matched it; if a first part landed, the rest of its message is taken now (it carries no header).
// Returns what cut that short (null when nothing is left behind).
std::exception_ptr SummaryMessages::withdrawFirstPart(int partner) noexcept {
  if (firstPart_ == MPI_REQUEST_NULL) return nullptr;
  try {
    const WatchPaused paused(deadline_);
    RINGSYNC_CHECK_MPI(MPI_Cancel(&firstPart_));
    MPI_Status status;
    int done = 0;
    while (!done) {
      RINGSYNC_CHECK_MPI(MPI_Test(&firstPart_, &done, &status));
      if (!done) deadline_.idle([&] { return std::vector<int>{partner}; });
    }
    int cancelled = 0, bytes = 0;
    RINGSYNC_CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    if (cancelled) return nullptr;
    RINGSYNC_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &bytes));
    dropRest(partner, static_cast<std::size_t>(bytes));
    return nullptr;
  } catch (...) {
    if (firstPart_ != MPI_REQUEST_NULL) {
      MPI_Request_free(&firstPart_);
      buffers_.incoming.abandon();
    }
    return std::current_exception();
  }
}

int SummaryMessages::nameOf(int member) const {
  if (group_.globalRanks == nullptr || member < 0 || static_cast<std::size_t>(member) >= group_.globalRanks->size())
    return member;
  return (*group_.globalRanks)[static_cast<std::size_t>(member)];
}

}  // namespace ringsync::detail
