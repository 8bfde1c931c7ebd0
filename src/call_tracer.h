// What the Communicator core measures about its calls: when each rank arrived (the arrival time
// every fingerprint carries, collectives/call_header.h), who kept the others waiting
// (straggler_stats.h), and, with RINGSYNC_TIMELINE, a record of every call in the process's
// Timeline. The core calls begin() from nextHeader, end() from notePlacement, failed() when a
// call throws; everything is a branch on a flag when nothing is measured.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "call_check.h"
#include "clock_offset.h"
#include "device_timer.h"
#include "collectives/call_header.h"
#include "logging.h"
#include "ringsync/options.h"
#include "straggler_stats.h"
#include "timeline.h"

namespace ringsync::detail {

class CallTracer final : public ArrivalObserver {
 public:
  // Collective over `comm`: arrival times are measured on every rank when any rank has the
  // timeline on or logs at info (a rank that did not stamp its arrival would leave every call
  // unmeasured), on a clock common to all ranks. When any rank records, the ranks agree on the
  // communicator's row in the timeline and join the merge at MPI_Finalize (timeline_gather.h),
  // recording or not, so that nobody waits there for a rank that will not answer.
  void start(MPI_Comm comm, int rank, int size, bool allOnOneNode, const Options& options);

  bool measuring() const { return measuring_; }

  void begin(CallHeader& header) {
    if (!measuring_) return;
    header.arrivalNs = steadyNowNs() + offsetNs_;
    if (timeline_) record(header);
  }
  void end(const char* backend, const char* algorithm, bool onDevice) {
    if (open_) finishRecord(backend, algorithm, onDevice);
  }
  void failed() noexcept;
  // Around device work the core enqueues on `stream` (NCCL): the first call marks its start on the
  // device, the second its end (CUDA events; nothing without a timeline).
  void deviceMark(CUstream_st* stream) {
    if (open_) markDevice(stream);
  }

  void observe(const RoundTransport& round) noexcept override;
  void observe(const CallSummary& summary) noexcept override;

  // A failure aborted the communicator: what the process recorded so far goes to its own file now
  // (PATH.rank<world rank>), in case it does not get to MPI_Finalize; the merge there removes it
  // once the part is in the merged file. Never throws.
  void flushAfterFailure() noexcept;
  // The communicator ends: rank 0 prints the straggler report (with the timeline on or at
  // RINGSYNC_LOG=info) and keeps the summary for the file; the calls stay in the process's
  // timeline until MPI_Finalize writes it (`comm` and `mergeSeconds` are no longer needed here:
  // start() took the merge's deadline from the options). Never throws.
  void finish(MPI_Comm comm, bool usable, double mergeSeconds, const Logger& logger) noexcept;

 private:
  void joinTimeline(MPI_Comm comm, bool allOnOneNode, const Options& options, int track);
  void record(const CallHeader& header);
  void finishRecord(const char* backend, const char* algorithm, bool onDevice);
  void markDevice(CUstream_st* stream);
  void resolveDeviceTimes() noexcept;
  std::string summaryJson() const;

  bool measuring_ = false;
  int rank_ = 0;
  int size_ = 1;
  std::int64_t offsetNs_ = 0;  // this host's steady clock -> the communicator's (its rank 0's)
  StragglerStats stragglers_;
  std::vector<std::int64_t> arrivals_;  // this call's, one per rank (reused)
  std::shared_ptr<Timeline> timeline_;  // the process's, while this communicator records
  int track_ = 0;
  std::vector<int> worldRanks_;               // when any rank records: the world rank of each rank
  std::unique_ptr<DeviceTimer> deviceTimer_;  // created with the first device call recorded
  // The call in progress, when recording: kept here until it ends, then copied into the timeline.
  CallRecord openRecord_;
  CallRecord* open_ = nullptr;              // &openRecord_ while a call is open
  std::vector<std::int64_t> openArrivals_;  // its arrival times (the timeline's arrivalRanks())
};

}  // namespace ringsync::detail
