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
constexpr int kTagTimelineReceived = 20;

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
        request = MPI_REQUEST_NULL;
        sent = MPI_Isend(out->data.data(), static_cast<int>(out->bytes), MPI_CHAR, 0, kTagTimelineData, comm,
                         &request) == MPI_SUCCESS &&
               waitUntil(&request, until, false);
      }
      if (!sent && request != MPI_REQUEST_NULL) out.release();  // MPI may still read it
      if (!sent) return 0;
      // A completed send only means MPI has the message (an eager one, as soon as rank 0's MPI
      // progresses, even while rank 0 is in a call it will never finish): the part counts as
      // delivered when rank 0 says it received it; otherwise this rank writes it beside the trace.
      char received = 0;
      request = MPI_REQUEST_NULL;
      return MPI_Irecv(&received, 1, MPI_CHAR, 0, kTagTimelineReceived, comm, &request) == MPI_SUCCESS &&
                     waitUntil(&request, until, true)
                 ? 1
                 : 0;
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
      static const char kReceived = 1;  // static: a send left pending never reads freed memory
      if (MPI_Isend(&kReceived, 1, MPI_CHAR, peer, kTagTimelineReceived, comm, &request) == MPI_SUCCESS)
        waitUntil(&request, until, false);
    }
    return arrived;
  } catch (...) {
    return rank == 0 ? 1 : 0;  // out of memory for a peer's part: keep what this rank has
  }
}

}  // namespace ringsync::detail
