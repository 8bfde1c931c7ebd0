// The timeline recorder (RINGSYNC_TIMELINE=PATH): every collective and every GradientAverager
// bucket of this process, kept in fixed-size rings allocated once, written as a Chrome trace when
// MPI finalizes (timeline_gather.h merges the processes into one file there).
//
// One Timeline per process, from the first communicator that records until MPI_Finalize: every
// Communicator that records (the averager's duplicate, torch groups, communicators made one after
// another) adds its calls to it, on a row of its own, so that one process is one rank in the trace
// and no communicator's calls are lost when another ends. Processes are labelled by their rank in
// MPI_COMM_WORLD, whatever communicators they are in. Recording never allocates: a call is kept by
// its communicator while it runs and copied into a slot claimed with one atomic increment when it
// ends (so another thread's calls cannot overwrite one still open, however long it runs); a span
// is a slot claimed the same way; the rings keep the latest kCallCapacity calls and
// kSpanCapacity averager events and count what they overwrote. Times are this host's steady clock
// (clock_offset.h); the file shifts each process onto world rank 0's. Records are read only when
// the recording threads are done (at MPI_Finalize, or when a failure flushes what was recorded).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ringsync::detail {

struct CallRecord {
  std::int64_t startNs = 0;  // this host's steady clock (steadyNowNs)
  std::int64_t endNs = 0;    // 0 while running, and for a call that failed
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::int32_t kind = 0;  // CollectiveKind, DataType, ReduceOp as in the CallHeader
  std::int32_t dataType = -1;
  std::int32_t op = -1;
  std::int32_t root = -1;
  std::int32_t track = 0;         // the communicator (its row: the same on every rank of it)
  std::int32_t lastRank = -1;     // the rank that arrived last; -1 when arrivals are unknown
  std::int32_t arrivalCount = 0;  // arrival times kept (the communicator's ranks, up to arrivalRanks()),
                                  // on the communicator's clock: only their differences are written
  // Device work (NCCL on a stream): DeviceTimer marks around it, resolved to times at the end.
  std::int64_t deviceStartMark = -1;
  std::int64_t deviceEndMark = -1;
  std::int64_t deviceStartNs = 0;
  std::int64_t deviceEndNs = 0;
  const char* backend = "";  // static strings (routeName, algorithmName)
  const char* algorithm = "";
  bool onDevice = false;
  bool failed = false;
};

// A GradientAverager event: markReady (an instant), a bucket, or the wait in synchronize().
enum class SpanKind : std::int32_t { kMarkReady, kBucket, kSynchronize };

struct SpanRecord {
  std::int64_t startNs = 0;
  std::int64_t endNs = 0;
  // For a bucket: the first collective it started and the end of the last one (0: none ran). Before
  // the exchange is the pack, after it the unpack.
  std::int64_t exchangeStartNs = 0;
  std::int64_t exchangeEndNs = 0;
  std::uint64_t index = 0;  // gradient (markReady), bucket, or step (synchronize)
  SpanKind kind = SpanKind::kMarkReady;
};

// A communicator's row: its id (agreed by its ranks) and its label, "communicator 2 (world ranks 1, 3)".
struct TimelineTrack {
  int id = 0;
  std::string label;
};

class Timeline {
 public:
  static constexpr std::size_t kCallCapacity = 1 << 15;
  static constexpr std::size_t kSpanCapacity = 1 << 16;
  // Arrival times kept per call (one per rank): calls on more ranks keep none.
  static constexpr int kMaxArrivalRanks = 64;

  // The process's timeline, created by the first call (`path` and the world rank and size come
  // from it) and kept until release().
  static std::shared_ptr<Timeline> open(const std::string& path, int worldRank, int worldSize);
  // The process's timeline, or null when none records (the GradientAverager asks this).
  static std::shared_ptr<Timeline> current();
  // Drops the process's timeline (once MPI_Finalize has written it): later calls record nothing.
  static void release();

  Timeline(std::string path, int rank, int size);

  // A communicator records on row `track` from now on.
  void addTrack(int track, std::string label);
  std::vector<TimelineTrack> tracks() const;

  // A call that ended: `record` and its arrivalRanks() arrival times (when record.arrivalCount > 0)
  // copied into the next slot of the ring.
  void commitCall(const CallRecord& record, const std::int64_t* arrivals);
  // A collective `record` ended (successfully or not) on this thread: an open bucket learns it.
  static void noteCallOnThisThread(const CallRecord& record);

  void instant(SpanKind kind, std::uint64_t index);
  SpanRecord* beginSpan(SpanKind kind, std::uint64_t index);
  void endSpan(SpanRecord* span);

  // Reading (no recording thread may be running): the records in the order they were claimed.
  std::vector<const CallRecord*> calls() const;
  std::vector<CallRecord*> calls();
  std::vector<const SpanRecord*> spans() const;
  const std::int64_t* arrivalsOf(const CallRecord* record) const;
  std::uint64_t droppedCalls() const;
  std::uint64_t droppedSpans() const;

  // A communicator's straggler summary (a JSON object), kept for the file's "otherData".
  void addSummary(std::string json);
  std::vector<std::string> summaries() const;

  const std::string& path() const { return path_; }
  int rank() const { return rank_; }  // in MPI_COMM_WORLD
  int size() const { return size_; }
  int arrivalRanks() const { return size_ <= kMaxArrivalRanks ? size_ : 0; }

 private:
  std::string path_;
  int rank_;
  int size_;
  std::vector<CallRecord> calls_;
  std::vector<std::int64_t> arrivals_;  // kCallCapacity x arrivalRanks()
  std::vector<SpanRecord> spans_;
  std::atomic<std::uint64_t> callsClaimed_{0};
  std::atomic<std::uint64_t> spansClaimed_{0};
  mutable std::mutex mutex_;  // tracks and summaries only
  std::vector<TimelineTrack> tracks_;
  std::vector<std::string> summaries_;
};

// A span for the lifetime of a scope (no-op without a timeline). A bucket span also marks the
// thread, so the collectives it runs record where its exchange began and ended.
class TimelineSpan {
 public:
  TimelineSpan(Timeline* timeline, SpanKind kind, std::uint64_t index);
  ~TimelineSpan();
  TimelineSpan(const TimelineSpan&) = delete;
  TimelineSpan& operator=(const TimelineSpan&) = delete;

 private:
  Timeline* timeline_;
  SpanRecord* span_ = nullptr;
  SpanRecord* outer_ = nullptr;
};

}  // namespace ringsync::detail
