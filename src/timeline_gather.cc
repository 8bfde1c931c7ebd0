#include "timeline_gather.h"

#include <chrono>
#include <climits>
#include <cstdint>
#include <memory>
#include <thread>

namespace ringsync::detail {
namespace {

constexpr int kTagTimelineSize = 18;  // tags no collective uses
constexpr int kTagTimelineData = 19;

using Clock = std::chrono::steady_clock;

// Polls `request` until it completes or `until` passes; then a receive is cancelled, and a send is
// left pending (its buffer must then outlive the process: the caller abandons it).
bool waitUntil(MPI_Request* request, Clock::time_point until, bool isReceive) {
  for (;;) {
    int done = 0;
    if (MPI_Test(request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (done) return true;
    if (Clock::now() > until) {
      if (isReceive && MPI_Cancel(request) == MPI_SUCCESS) MPI_Wait(request, MPI_STATUS_IGNORE);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// What a rank sends, on the heap: released (never freed) when the send does not complete.
struct Outgoing {
  std::uint64_t bytes = 0;
  std::string data;
};

}  // namespace

int gatherTimelineParts(MPI_Comm comm, int rank, int size, const std::string& mine, double seconds,
                        std::vector<std::string>* parts) noexcept {
  try {
    const Clock::time_point until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    if (rank != 0) {
      if (mine.size() > INT_MAX) return 0;
      auto out = std::make_unique<Outgoing>(Outgoing{mine.size(), mine});
      MPI_Request request = MPI_REQUEST_NULL;
      bool sent = MPI_Isend(&out->bytes, 1, MPI_UINT64_T, 0, kTagTimelineSize, comm, &request) == MPI_SUCCESS &&
                  waitUntil(&request, until, false);
      if (sent) {
        // A synchronous send: it completes only once rank 0 has matched it, i.e. rank 0 is taking
        // the part. A standard send of a small part completes as soon as MPI has it (rank 0's MPI
        // progressing is enough, even while rank 0 is in a call it will never finish), and the
        // part was lost when rank 0 then never gathered.
        request = MPI_REQUEST_NULL;
        sent = MPI_Issend(out->data.data(), static_cast<int>(out->bytes), MPI_CHAR, 0, kTagTimelineData, comm,
                          &request) == MPI_SUCCESS &&
               waitUntil(&request, until, false);
      }
      if (!sent && request != MPI_REQUEST_NULL) out.release();  // MPI may still read it
      return sent ? 1 : 0;
    }
    parts->assign(static_cast<std::size_t>(size), std::string());
    (*parts)[0] = mine;
    int arrived = 1;
    for (int peer = 1; peer < size; ++peer) {
      std::uint64_t bytes = 0;
      MPI_Request request = MPI_REQUEST_NULL;
      if (MPI_Irecv(&bytes, 1, MPI_UINT64_T, peer, kTagTimelineSize, comm, &request) != MPI_SUCCESS) continue;
      if (!waitUntil(&request, until, true) || bytes > INT_MAX) continue;
      std::string& part = (*parts)[static_cast<std::size_t>(peer)];
      part.resize(static_cast<std::size_t>(bytes));
      if (MPI_Irecv(part.data(), static_cast<int>(bytes), MPI_CHAR, peer, kTagTimelineData, comm, &request) != MPI_SUCCESS ||
          !waitUntil(&request, until, true)) {
        part.clear();
        continue;
      }
      ++arrived;
    }
    return arrived;
  } catch (...) {
    return rank == 0 ? 1 : 0;  // out of memory for a peer's part: keep what this rank has
  }
}

}  // namespace ringsync::detail
