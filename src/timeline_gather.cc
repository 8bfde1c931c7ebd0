#include "timeline_gather.h"

#include <chrono>
#include <climits>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include <mpi.h>

#include "collectives/mpi_tags.h"
#include "logging.h"
#include "timeline.h"
#include "timeline_output.h"

namespace ringsync::detail {
namespace {


using Clock = std::chrono::steady_clock;

struct MergeState {
  bool hooked = false;
  std::set<int> partners;     // world rank 0: the world ranks it shared a recording communicator with
  bool withRankZero = false;  // another rank: it shared one with world rank 0
  double seconds = 10.0;
  LogLevel logLevel = LogLevel::kWarn;
  bool shiftKnown = false;
  std::int64_t shiftNs = 0;
};

std::mutex stateMutex;
MergeState state;

// A process's part: its RINGSYNC_TIMELINE ("" when it records nothing), its events, its summary.
struct Part {
  std::string path;
  std::string events;
  std::string summary;
};

int worldRank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

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
  std::uint64_t bytes[3] = {};
  std::string data;
};

// Another rank: true when world rank 0 took `part` in time.
bool sendPart(const Part& part, Clock::time_point until) {
  auto out = std::make_unique<Outgoing>();
  out->bytes[0] = part.path.size();
  out->bytes[1] = part.events.size();
  out->bytes[2] = part.summary.size();
  out->data = part.path + part.events + part.summary;
  if (out->data.size() > INT_MAX) return false;
  MPI_Request request = MPI_REQUEST_NULL;
  bool sent = MPI_Isend(out->bytes, 3, MPI_UINT64_T, 0, kTagTimelineSize, MPI_COMM_WORLD, &request) == MPI_SUCCESS &&
              waitUntil(&request, until, false);
  if (sent) {
    // A synchronous send: it completes only once world rank 0 has matched it, i.e. is taking the
    // part (a standard send of a small part completes as soon as MPI has it).
    request = MPI_REQUEST_NULL;
    sent = MPI_Issend(out->data.data(), static_cast<int>(out->data.size()), MPI_CHAR, 0, kTagTimelineData,
                      MPI_COMM_WORLD, &request) == MPI_SUCCESS &&
           waitUntil(&request, until, false);
  }
  if (!sent && request != MPI_REQUEST_NULL) out.release();  // MPI may still read it
  return sent;
}

// World rank 0: `peer`'s part, false when it did not arrive in time.
bool receivePart(int peer, Part* part, Clock::time_point until) {
  std::uint64_t bytes[3] = {};
  MPI_Request request = MPI_REQUEST_NULL;
  if (MPI_Irecv(bytes, 3, MPI_UINT64_T, peer, kTagTimelineSize, MPI_COMM_WORLD, &request) != MPI_SUCCESS ||
      !waitUntil(&request, until, true))
    return false;
  const std::uint64_t total = bytes[0] + bytes[1] + bytes[2];
  if (total > INT_MAX || total < bytes[0]) return false;
  std::string data(static_cast<std::size_t>(total), '\0');
  if (MPI_Irecv(data.data(), static_cast<int>(total), MPI_CHAR, peer, kTagTimelineData, MPI_COMM_WORLD, &request) !=
          MPI_SUCCESS ||
      !waitUntil(&request, until, true))
    return false;
  part->path = data.substr(0, bytes[0]);
  part->events = data.substr(bytes[0], bytes[1]);
  part->summary = data.substr(bytes[0] + bytes[1]);
  return true;
}

std::string ownFile(const Timeline& timeline) { return timeline.path() + ".rank" + std::to_string(timeline.rank()); }

void keepOwnPart(const Part& mine, const Timeline& timeline, const Logger& logger, const std::string& why) {
  const std::string file = ownFile(timeline);
  if (writeFileAtomically(file, traceFile({mine.events}, {mine.summary}, timeline.size(), 1)))
    logger.warn("timeline: " + why + "; this rank's part is in " + file);
  else logger.warn("timeline: " + why + ", and this rank's part could not be written to " + file);
}

std::string listRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

// World rank 0: every partner's part, then the file.
void gatherAndWrite(Part mine, const MergeState& s, const Timeline* timeline, int worldSize, const Logger& logger,
                    Clock::time_point until) {
  std::vector<std::string> events(static_cast<std::size_t>(worldSize)), summaries(events.size());
  std::string path = mine.path;
  events[0] = std::move(mine.events);
  summaries[0] = std::move(mine.summary);
  std::vector<int> missing;
  for (int peer : s.partners) {
    Part part;
    if (peer <= 0 || peer >= worldSize || !receivePart(peer, &part, until)) {
      missing.push_back(peer);
      continue;
    }
    if (path.empty()) path = part.path;  // world rank 0 records nothing: the lowest sender's PATH
    events[static_cast<std::size_t>(peer)] = std::move(part.events);
    summaries[static_cast<std::size_t>(peer)] = std::move(part.summary);
  }
  if (!missing.empty())
    logger.warn("timeline: world rank(s) " + listRanks(missing) + " sent no part within " +
                std::to_string(static_cast<int>(s.seconds)) +
                " s at MPI_Finalize; a rank that recorded keeps its part in its own RINGSYNC_TIMELINE path + .rank<r>");
  if (path.empty()) return;  // nobody records
  int inFile = 0;
  for (const std::string& part : events) inFile += part.size() > 2 ? 1 : 0;
  if (!writeFileAtomically(path, traceFile(events, summaries, worldSize, inFile))) {
    logger.warn("timeline: could not write " + path);
    if (timeline) keepOwnPart({timeline->path(), events[0], summaries[0]}, *timeline, logger, "the merge failed");
  } else if (timeline) {
    std::remove(ownFile(*timeline).c_str());  // a failure's early copy (CallTracer) is in the file now
  }
}

void mergeAtFinalize() noexcept {
  try {
    MergeState s;
    {
      std::lock_guard<std::mutex> lock(stateMutex);
      s = state;
    }
    const std::shared_ptr<Timeline> timeline = Timeline::current();
    const int rank = worldRank();
    int worldSize = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    const Logger logger(s.logLevel, rank);
    const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                       std::chrono::duration<double>(s.seconds));
    Part mine;
    if (timeline) mine = {timeline->path(), traceEvents(*timeline, s.shiftNs), traceSummary(*timeline)};
    if (rank == 0) {
      gatherAndWrite(std::move(mine), s, timeline.get(), worldSize, logger, until);
    } else if (!s.withRankZero) {
      if (timeline)
        keepOwnPart(mine, *timeline, logger,
                    "this rank shared no recording communicator with world rank 0, which writes the merged file");
    } else if (!sendPart(mine, until)) {
      if (timeline)
        keepOwnPart(mine, *timeline, logger,
                    "world rank 0 did not take this rank's part within " + std::to_string(static_cast<int>(s.seconds)) +
                        " s at MPI_Finalize");
    } else if (timeline) {
      std::remove(ownFile(*timeline).c_str());  // a failure's early copy is in world rank 0's file now
    }
  } catch (...) {
    // Out of memory at the very end: nothing more to save.
  }
  Timeline::release();
}

// MPI deletes MPI_COMM_SELF's attributes first thing in MPI_Finalize, in every process that set
// one, while point-to-point still works.
int onFinalize(MPI_Comm, int, void*, void*) {
  mergeAtFinalize();
  return MPI_SUCCESS;
}

}  // namespace

void joinTimelineMerge(const std::vector<int>& worldRanks, double mergeSeconds, LogLevel logLevel) {
  const int me = worldRank();
  std::lock_guard<std::mutex> lock(stateMutex);
  if (!state.hooked) {
    int keyval = MPI_KEYVAL_INVALID;
    state.hooked = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &onFinalize, &keyval, nullptr) == MPI_SUCCESS &&
                   MPI_Comm_set_attr(MPI_COMM_SELF, keyval, nullptr) == MPI_SUCCESS;
    state.seconds = mergeSeconds;
    state.logLevel = logLevel;
  }
  for (int rank : worldRanks) {
    if (me == 0 && rank != 0) state.partners.insert(rank);
    if (me != 0 && rank == 0) state.withRankZero = true;
  }
}

void setClockShiftToWorldRankZero(std::int64_t shiftNs) {
  std::lock_guard<std::mutex> lock(stateMutex);
  if (state.shiftKnown) return;
  state.shiftKnown = true;
  state.shiftNs = shiftNs;
}

std::int64_t clockShiftToWorldRankZero() {
  std::lock_guard<std::mutex> lock(stateMutex);
  return state.shiftNs;
}

}  // namespace ringsync::detail
