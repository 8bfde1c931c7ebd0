#include "call_tracer.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "collectives/mpi_check.h"
#include "collectives/shared_slots.h"
#include "ringsync/types.h"
#include "timeline_gather.h"
#include "timeline_output.h"

namespace ringsync::detail {
namespace {

// The collectives layer cannot log (it sits below the core's Logger): a shortage of /dev/shm met
// while this communicator's rounds were made is said here, once per process, at RINGSYNC_LOG=info.
// (The core's constructor is its natural place, right after the rounds are made.)
void reportSharedMemoryShortage(int rank, const Options& options) {
  const Logger logger(options.logLevel, rank);
  if (!logger.enabled(LogLevel::kInfo)) return;
  const std::string notice = SharedSlots::takeShortageNotice();
  if (!notice.empty()) logger.info(notice);
}

}  // namespace

void CallTracer::start(MPI_Comm comm, int rank, int size, bool allOnOneNode, const Options& options) {
  rank_ = rank;
  size_ = size;
  reportSharedMemoryShortage(rank, options);
  int mine = !options.timelinePath.empty() || options.logLevel >= LogLevel::kInfo ? 1 : 0;
  int any = mine;
  if (size > 1) RINGSYNC_CHECK_MPI(MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_LOR, comm));
  if (!any) return;
  measuring_ = true;
  offsetNs_ = clockOffsetToRankZero(comm, rank, size, allOnOneNode);
  stragglers_ = StragglerStats(size);
  arrivals_.assign(static_cast<std::size_t>(size), 0);
  if (options.timelinePath.empty()) return;
  timeline_ = Timeline::open(options.timelinePath, rank, size, offsetNs_);
  track_ = timeline_->attach();
}

void CallTracer::record(const CallHeader& header) {
  open_ = timeline_->claimCall(&openArrivals_);
  CallRecord& call = *open_;
  call.startNs = header.arrivalNs;
  call.sequence = header.sequence;
  call.count = header.count;
  call.kind = header.kind;
  call.dataType = header.dataType;
  call.op = header.op;
  call.root = header.root;
  call.bytes = header.dataType >= 0 ? header.count * dataTypeSize(static_cast<DataType>(header.dataType)) : 0;
  call.track = track_;
  call.onDevice = static_cast<MemoryKind>(header.memory) == MemoryKind::kDevice;
}

void CallTracer::finishRecord(const char* backend, const char* algorithm, bool onDevice) {
  open_->backend = backend;
  open_->algorithm = algorithm;
  open_->onDevice = onDevice;
  open_->endNs = steadyNowNs() + offsetNs_;
  Timeline::noteCallOnThisThread(*open_);
  open_ = nullptr;
}

void CallTracer::markDevice(CUstream_st* stream) {
  if (!deviceTimer_) deviceTimer_ = makeDeviceTimer(offsetNs_);
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
  open_->endNs = steadyNowNs() + offsetNs_;  // when the failure surfaced here
  Timeline::noteCallOnThisThread(*open_);
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
  // The timeline keeps arrivalRanks() times per call (its first communicator's size, up to 64): a
  // communicator over more ranks keeps none (its straggler report still counts every call).
  open_->arrivalCount = size_ <= timeline_->arrivalRanks() ? size_ : 0;
  for (int r = 0; r < open_->arrivalCount; ++r) openArrivals_[r] = arrivals_[static_cast<std::size_t>(r)];
}

std::string CallTracer::summaryJson() const {
  std::vector<std::int64_t> waitedUs;
  for (const std::int64_t ns : stragglers_.waitedNs()) waitedUs.push_back(ns / 1000);
  const nlohmann::ordered_json summary = {{"communicator", track_},
                                  {"calls", stragglers_.calls()},
                                  {"last_to_arrive", stragglers_.lastCount()},
                                  {"waited_us", waitedUs},
                                  {"straggler", stragglers_.straggler()}};
  return summary.dump();
}

void CallTracer::flushAfterFailure() noexcept {
  if (!timeline_) return;
  try {
    failed();
    writeFileAtomically(timeline_->path() + ".rank" + std::to_string(rank_),
                        traceFile({traceEvents(*timeline_)}, *timeline_, 1));
  } catch (...) {
    // Out of memory while failing: nothing more to save.
  }
}

void CallTracer::finish(MPI_Comm comm, bool usable, double mergeSeconds, const Logger& logger) noexcept {
  if (!measuring_) return;
  try {
    if (rank_ == 0 && stragglers_.calls() > 0) {
      const std::string report = stragglers_.report("communicator " + std::to_string(track_));
      logger.report(report);  // with RINGSYNC_LOG=info, or asked for by the timeline
    }
    if (!timeline_) return;
    if (usable) resolveDeviceTimes();  // after a failure the device may not answer
    timeline_->addSummary(summaryJson());
    if (!timeline_->detach()) return;
    const std::string mine = traceEvents(*timeline_);
    std::vector<std::string> parts{mine};
    int arrived = rank_ == 0 ? 1 : 0;  // without a usable communicator, every rank keeps its own
    if (usable) arrived = gatherTimelineParts(comm, rank_, size_, mine, mergeSeconds, &parts);
    if (rank_ == 0 && arrived > 0) {
      if (!writeFileAtomically(timeline_->path(), traceFile(parts, *timeline_, arrived)))
        logger.warn("could not write the timeline to " + timeline_->path());
      if (arrived < size_) logger.warn("timeline: only " + std::to_string(arrived) + " of " + std::to_string(size_) +
                                       " ranks' parts reached rank 0; the others are in " + timeline_->path() + ".rank<r>");
    } else if (arrived == 0) {
      writeFileAtomically(timeline_->path() + ".rank" + std::to_string(rank_), traceFile({mine}, *timeline_, 1));
    }
    timeline_.reset();
  } catch (...) {
    // Never from a destructor.
  }
}

}  // namespace ringsync::detail
