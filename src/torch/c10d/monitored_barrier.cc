// RingsyncBackend::monitoredBarrier (torch.distributed.monitored_barrier): Gloo's protocol and
// messages, over MPI point-to-point on the group's MPI communicator (a tag of the backend's own).
// Every other rank sends rank 0 a message and waits for its answer; rank 0 waits for every rank
// until the barrier's timeout and names those that did not arrive (the first, or all of them with
// wait_all_ranks), answering the others only when every rank arrived, so that all pass or none
// does. Messages carry the barrier's number: one left over from an earlier barrier that failed
// is dropped. Memory of messages still in flight when the barrier fails is kept (abandoned_memory.h).
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "abandoned_memory.h"
#include "blocking_wait.h"
#include "mpi_polling.h"
#include "ringsync/errors.h"
#include "ringsync_backend.h"

namespace ringsync::torch_backend {
namespace {

using Clock = std::chrono::steady_clock;

struct Messages {
  explicit Messages(std::size_t size) : values(size), requests(size, MPI_REQUEST_NULL) {}
  std::vector<std::uint64_t> values;
  std::vector<MPI_Request> requests;

  // Stops what is still in flight (a receive not yet matched ends; anything else finishes in MPI,
  // into memory kept for good).
  static void abandon(const std::shared_ptr<Messages>& self) {
    for (MPI_Request& r : self->requests) {
      if (r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(&r);
      MPI_Request_free(&r);
    }
    keepUntilExit(self);
  }
};

// Polls `request` until it completes (true) or `end` passes (false).
bool waitUntil(MPI_Request& request, Clock::time_point end, bool spin) {
  IdleWait idle(spin);
  for (int done = 0;;) {
    checkMpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return true;
    if (Clock::now() >= end) return false;
    idle.pause();
  }
}

std::string rankListText(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

// A receive from `peer` of barrier `number`, dropping messages of earlier barriers.
bool receiveCurrent(const MpiSide& side, Messages& m, int peer, int tag, std::uint64_t number, Clock::time_point end) {
  auto& request = m.requests[static_cast<std::size_t>(peer)];
  for (;;) {
    if (!waitUntil(request, end, side.options().spinWait)) return false;
    if (m.values[static_cast<std::size_t>(peer)] >= number) return true;
    checkMpi(MPI_Irecv(&m.values[static_cast<std::size_t>(peer)], 1, MPI_UINT64_T, peer, tag, side.comm(), &request),
             "MPI_Irecv");
  }
}

void rankZero(const MpiSide& side, int tag, std::uint64_t number, std::chrono::milliseconds timeout, bool waitAll) {
  const auto start = Clock::now();
  const auto end = start + timeout;
  const auto arrivals = std::make_shared<Messages>(static_cast<std::size_t>(side.size()));
  for (int r = 1; r < side.size(); ++r)
    checkMpi(MPI_Irecv(&arrivals->values[static_cast<std::size_t>(r)], 1, MPI_UINT64_T, r, tag, side.comm(),
                       &arrivals->requests[static_cast<std::size_t>(r)]),
             "MPI_Irecv");
  std::vector<int> failed;
  for (int r = 1; r < side.size(); ++r) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (!waitAll && Clock::now() > end) {
      Messages::abandon(arrivals);
      throw TimeoutError("[Rank 0]: Rank 0 timed out in monitoredBarrier after " + std::to_string(elapsed.count()) +
                         " ms (rank " + std::to_string(r) + " had not arrived)");
    }
    if (receiveCurrent(side, *arrivals, r, tag, number, end)) continue;
    failed.push_back(r);
    if (!waitAll) break;
  }
  if (!failed.empty()) {
    Messages::abandon(arrivals);
    throw TimeoutError(std::string("[Rank 0]: ") + (failed.size() == 1 ? "Rank " : "Ranks ") + rankListText(failed) +
                       " failed to pass monitoredBarrier in " + std::to_string(timeout.count()) + " ms");
  }
  // Everyone arrived: release them all.
  const auto answers = std::make_shared<Messages>(static_cast<std::size_t>(side.size()));
  const auto answerBy = Clock::now() + timeout;
  for (int r = 1; r < side.size(); ++r) {
    answers->values[static_cast<std::size_t>(r)] = number;
    checkMpi(MPI_Isend(&answers->values[static_cast<std::size_t>(r)], 1, MPI_UINT64_T, r, tag, side.comm(),
                       &answers->requests[static_cast<std::size_t>(r)]),
             "MPI_Isend");
  }
  for (int r = 1; r < side.size(); ++r) {
    if (waitUntil(answers->requests[static_cast<std::size_t>(r)], answerBy, side.options().spinWait)) continue;
    Messages::abandon(answers);
    throw TimeoutError("[Rank 0]: Rank " + std::to_string(r) + " failed to pass monitoredBarrier in " +
                       std::to_string(timeout.count()) + " ms (it did not take rank 0's answer)");
  }
}

// Other ranks wait for rank 0's answer as long as the group's deadline (rank 0 alone applies the
// barrier's timeout, as in Gloo, so that a slow rank 0 is not reported by everyone else).
void otherRank(const MpiSide& side, int tag, std::uint64_t number) {
  const double seconds = side.options().timeoutSeconds > 0 ? side.options().timeoutSeconds : 1e9;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  const auto m = std::make_shared<Messages>(2);  // [0]: sent, [1]: rank 0's answer
  m->values[0] = number;
  checkMpi(MPI_Isend(&m->values[0], 1, MPI_UINT64_T, 0, tag, side.comm(), &m->requests[0]), "MPI_Isend");
  checkMpi(MPI_Irecv(&m->values[1], 1, MPI_UINT64_T, 0, tag, side.comm(), &m->requests[1]), "MPI_Irecv");
  bool answered = waitUntil(m->requests[0], end, side.options().spinWait);
  while (answered) {
    answered = waitUntil(m->requests[1], end, side.options().spinWait);
    if (!answered || m->values[1] >= number) break;
    checkMpi(MPI_Irecv(&m->values[1], 1, MPI_UINT64_T, 0, tag, side.comm(), &m->requests[1]), "MPI_Irecv");
  }
  if (answered) return;
  Messages::abandon(m);
  throw TimeoutError("Rank " + std::to_string(side.rank()) +
                     " successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
                     "rank 0. Please check rank 0 logs for faulty rank.");
}

}  // namespace

void RingsyncBackend::monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) {
  state_->throwIfAborted("monitored_barrier");
  const std::chrono::milliseconds timeout = opts.timeout == ::c10d::kUnsetTimeout ? timeout_ : opts.timeout;
  const int tag = messages_->reservedTag(1);
  const std::uint64_t number = ++monitoredBarriers_;
  if (getSize() == 1) return;
  std::exception_ptr failure;
  blockingWait([&] {
    try {
      if (getRank() == 0) {
        rankZero(*mpi_, tag, number, timeout, waitAllRanks);
      } else {
        otherRank(*mpi_, tag, number);
      }
    } catch (...) {
      failure = std::current_exception();
    }
  });
  if (failure) std::rethrow_exception(failure);
}

}  // namespace ringsync::torch_backend
