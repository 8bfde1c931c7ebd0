#include "call_tracer.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/mpi_check.h"
#include "ringsync/types.h"
#include "timeline_gather.h"
#include "timeline_output.h"

namespace ringsync::detail {
namespace {

// The collectives layer cannot log (it sits below the core's Logger): a shortage of /dev/shm met
// while this communicator's rounds were made is said here, once per process, at RINGSYNC_LOG=info.
// (The core's constructor is its natural place, right after the rounds are made.)
// The process's next free timeline row: a communicator takes the largest among its ranks, so that
// it has one row id on every rank of it.
std::atomic<int> nextTrack{0};

// What each rank tells the others when a communicator is built.
constexpr std::int32_t kRecords = 1;   // RINGSYNC_TIMELINE set
constexpr std::int32_t kLogsInfo = 2;  // RINGSYNC_LOG=info or more
struct Member {
  std::int32_t flags;
  std::int32_t worldRank;
  std::int32_t nextTrack;
};

// "communicator 2 (world ranks 1, 3)"; past 16 ranks the first 8 and the last.
std::string trackLabel(int track, const std::vector<int>& worldRanks) {
  const std::size_t shown = worldRanks.size() <= 16 ? worldRanks.size() : 8;
  std::string label = "communicator " + std::to_string(track) + " (world ranks ";
  for (std::size_t i = 0; i < shown; ++i) label += (i ? ", " : "") + std::to_string(worldRanks[i]);
  if (shown < worldRanks.size())
    label += ", ..., " + std::to_string(worldRanks.back()) + ": " + std::to_string(worldRanks.size()) + " ranks";
  return label + ")";
}

}  // namespace

void CallTracer::start(MPI_Comm comm, int rank, int size, bool allOnOneNode, const Options& options) {
  rank_ = rank;
  size_ = size;
  int worldRank = 0;
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &worldRank));
  const std::int32_t flags = (options.timelinePath.empty() ? 0 : kRecords) |
                             (options.logLevel >= LogLevel::kInfo ? kLogsInfo : 0);
  const Member mine{flags, worldRank, nextTrack.load()};
  std::vector<Member> members(static_cast<std::size_t>(size), mine);
  if (size > 1)
    RINGSYNC_CHECK_MPI(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, members.data(), sizeof mine, MPI_BYTE, comm));
  int anyFlags = 0, track = 0;
  for (const Member& member : members) {
    anyFlags |= member.flags;
    track = std::max(track, member.nextTrack);
  }
  if (anyFlags == 0) return;
  measuring_ = true;
  offsetNs_ = clockOffsetToRankZero(comm, rank, size, allOnOneNode);
  stragglers_ = StragglerStats(size);
  arrivals_.assign(static_cast<std::size_t>(size), 0);
  if (!(anyFlags & kRecords)) return;
  for (const Member& member : members) worldRanks_.push_back(member.worldRank);
  joinTimeline(comm, allOnOneNode, options, track);
}

// Some rank records: this one joins the merge at MPI_Finalize (recording or not), learns its clock
// against world rank 0 where that rank is here, and records on the row every rank agreed on.
void CallTracer::joinTimeline(MPI_Comm comm, bool allOnOneNode, const Options& options, int track) {
  track_ = track;
  int expected = nextTrack.load();
  while (expected <= track && !nextTrack.compare_exchange_weak(expected, track + 1)) {
  }
  // At MPI_Finalize a rank may be a whole deadline late (waiting out a failed call) before it
  // sends: wait for that and 10 s more. (Open MPI's MPI_Finalize waits for every process anyway.)
  joinTimelineMerge(worldRanks_, (options.timeoutSeconds > 0 ? options.timeoutSeconds : 0) + 10.0, options.logLevel);
  const auto zero = std::find(worldRanks_.begin(), worldRanks_.end(), 0);
  if (zero != worldRanks_.end()) {
    // This host's clock + offsetNs_ is the communicator's; world rank 0's + its offset too.
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(size_), 0);
    if (!allOnOneNode)
      RINGSYNC_CHECK_MPI(MPI_Allgather(&offsetNs_, 1, MPI_INT64_T, offsets.data(), 1, MPI_INT64_T, comm));
    const std::int64_t zeroOffsetNs = offsets[static_cast<std::size_t>(zero - worldRanks_.begin())];
    setClockShiftToWorldRankZero(allOnOneNode ? 0 : offsetNs_ - zeroOffsetNs);
  }
  if (options.timelinePath.empty()) return;
  int worldSize = 1;
  RINGSYNC_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &worldSize));
  timeline_ = Timeline::open(options.timelinePath, worldRanks_[static_cast<std::size_t>(rank_)], worldSize);
  timeline_->addTrack(track_, trackLabel(track_, worldRanks_));
}

void CallTracer::record(const CallHeader& header) {
  openRecord_ = CallRecord{};
  open_ = &openRecord_;
  openArrivals_.assign(static_cast<std::size_t>(timeline_->arrivalRanks()), 0);
  CallRecord& call = *open_;
  call.startNs = header.arrivalNs - offsetNs_;  // this host's steady clock
  call.sequence = header.sequence;
  call.count = header.count;
  call.kind = static_cast<std::int32_t>(header.kind);
  call.dataType = static_cast<std::int32_t>(header.dataType);
  call.op = static_cast<std::int32_t>(header.op);
  call.root = header.root;
  call.bytes = header.dataType != kNoDataType ? header.count * dataTypeSize(header.dataType) : 0;
  call.track = track_;
  call.onDevice = header.memory == MemoryKind::kDevice;
}

void CallTracer::finishRecord(const char* backend, const char* algorithm, bool onDevice) {
  open_->backend = backend;
  open_->algorithm = algorithm;
  open_->onDevice = onDevice;
  open_->endNs = steadyNowNs();
  Timeline::noteCallOnThisThread(*open_);
  timeline_->commitCall(*open_, openArrivals_.data());
  open_ = nullptr;
}

void CallTracer::markDevice(CUstream_st* stream) {
  if (!deviceTimer_) deviceTimer_ = makeDeviceTimer(0);  // records are on this host's steady clock
  if (!deviceTimer_) return;
  std::int64_t& mark = open_->deviceStartMark < 0 ? open_->deviceStartMark : open_->deviceEndMark;
  mark = deviceTimer_->mark(stream);
}

void CallTracer::observe(const CallSummary& summary) noexcept {
  if (!measuring_ || summary.ranks != size_ || !summary.everyArrivalKnown()) return;
  stragglers_.noteLast(summary.latestRank, summary.waitedForLatestNs());
  if (open_) open_->lastRank = summary.latestRank;  // no per-rank times: arrivalCount stays 0
}

// Waits for the device marks of the calls still in the timeline (this communicator's only: each
// owns its timer) and turns them into times.
void CallTracer::resolveDeviceTimes() noexcept {
  if (!deviceTimer_) return;
  try {
    for (CallRecord* call : timeline_->calls()) {
      if (call->track != track_ || call->deviceEndMark < 0) continue;
      call->deviceStartNs = deviceTimer_->resolve(call->deviceStartMark);
      call->deviceEndNs = deviceTimer_->resolve(call->deviceEndMark);
    }
  } catch (...) {
    // Out of memory listing the records: the device rows are left out.
  }
}

void CallTracer::failed() noexcept {
  if (!open_) return;
  open_->failed = true;
  open_->endNs = steadyNowNs();  // when the failure surfaced here
  Timeline::noteCallOnThisThread(*open_);
  timeline_->commitCall(*open_, openArrivals_.data());
  open_ = nullptr;
}

void CallTracer::observe(const RoundTransport& round) noexcept {
  if (!measuring_ || round.size() != size_) return;
  for (int r = 0; r < size_; ++r) {
    arrivals_[static_cast<std::size_t>(r)] = round.header(r).arrivalNs;
    if (arrivals_[static_cast<std::size_t>(r)] == 0) return;  // a rank that does not measure
  }
  const int last = stragglers_.note(arrivals_.data(), size_);
  if (!open_) return;
  open_->lastRank = last;
  // The timeline keeps arrivalRanks() times per call (the world's size, up to 64): a communicator
  // over more ranks keeps none (its straggler report still counts every call).
  open_->arrivalCount = size_ <= timeline_->arrivalRanks() ? size_ : 0;
  for (int r = 0; r < open_->arrivalCount; ++r)
    openArrivals_[static_cast<std::size_t>(r)] = arrivals_[static_cast<std::size_t>(r)];
}

std::string CallTracer::summaryJson() const {
  std::vector<std::int64_t> waitedUs;
  for (const std::int64_t ns : stragglers_.waitedNs()) waitedUs.push_back(ns / 1000);
  const nlohmann::ordered_json summary = {{"communicator", track_},       {"world_ranks", worldRanks_},
                                          {"calls", stragglers_.calls()}, {"last_to_arrive", stragglers_.lastCount()},
                                          {"waited_us", waitedUs},        {"straggler", stragglers_.straggler()}};
  return summary.dump();
}

void CallTracer::flushAfterFailure() noexcept {
  if (!timeline_) return;
  try {
    failed();
    writeFileAtomically(timeline_->path() + ".rank" + std::to_string(timeline_->rank()),
                        traceFile({traceEvents(*timeline_, clockShiftToWorldRankZero())}, {traceSummary(*timeline_)},
                                  timeline_->size(), 1));
  } catch (...) {
    // Out of memory while failing: nothing more to save.
  }
}

void CallTracer::finish(MPI_Comm, bool usable, double, const Logger& logger) noexcept {
  if (!measuring_) return;
  try {
    if (rank_ == 0 && stragglers_.calls() > 0) {
      const std::string report = stragglers_.report("communicator " + std::to_string(track_));
      logger.report(report);  // with RINGSYNC_LOG=info, or asked for by the timeline
    }
    if (!timeline_) return;
    if (usable) resolveDeviceTimes();  // after a failure the device may not answer
    if (rank_ == 0) timeline_->addSummary(summaryJson());
    timeline_.reset();  // the calls stay in the process's timeline until MPI_Finalize
  } catch (...) {
    // Never from a destructor.
  }
}

}  // namespace ringsync::detail
