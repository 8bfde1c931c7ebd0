// The timeline recorder (RINGSYNC_TIMELINE=PATH): every collective and every GradientAverager
// bucket of this process, kept in fixed-size rings allocated once, written as a Chrome trace when
// the last communicator that records ends (timeline_output.h merges the ranks into one file).
//
// One Timeline per process, shared by every Communicator that records (the averager's duplicate
// included) so that one rank is one process in the trace. Recording never allocates: a record is a
// slot claimed with one atomic increment; the rings keep the latest kCallCapacity calls and
// kSpanCapacity averager events and count what they overwrote. Records are read only when the
// recording threads are done (at the end, or when a failure flushes what was recorded so far).
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
  std::int64_t startNs = 0;  // on the common clock (clock_offset.h)
  std::int64_t endNs = 0;    // 0 while running, and for a call that failed
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::int32_t kind = 0;  // CollectiveKind, DataType, ReduceOp as in the CallHeader
  std::int32_t dataType = -1;
  std::int32_t op = -1;
  std::int32_t root = -1;
  std::int32_t track = 0;     // the communicator
  std::int32_t lastRank = -1; // the rank that arrived last; -1 when arrivals are unknown
  std::int32_t arrivalCount = 0;  // arrival times kept: the communicator's ranks, up to arrivalRanks()
  // Device work (NCCL on a stream): DeviceTimer marks around it, resolved to times at the end.
  std::int64_t deviceStartMark = -1;
  std::int64_t deviceEndMark = -1;
  std::int64_t deviceStartNs = 0;
  std::int64_t deviceEndNs = 0;
  const char* backend = "";   // static strings (routeName, algorithmName)
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

class Timeline {
 public:
  static constexpr std::size_t kCallCapacity = 1 << 15;
  static constexpr std::size_t kSpanCapacity = 1 << 16;
  // Arrival times kept per call (one per rank): calls on more ranks keep none.
  static constexpr int kMaxArrivalRanks = 64;

  // The process's timeline (created on the first call; `path`, `rank`, `size` and the offset that
  // turns the steady clock into the common one come from that call).
  static std::shared_ptr<Timeline> open(const std::string& path, int rank, int size, std::int64_t clockOffsetNs);
  // The process's timeline, or null when none records (the GradientAverager asks this).
  static std::shared_ptr<Timeline> current();

  Timeline(std::string path, int rank, int size, std::int64_t clockOffsetNs);

  // A communicator starts / stops recording; the returned track names it in the trace. detach()
  // is true for the last one: the caller then writes the file.
  int attach();
  bool detach();

  // The slot of a new call (the caller fills it; see CallTracer). Never null.
  CallRecord* claimCall(std::int64_t** arrivals);
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
  int rank() const { return rank_; }
  int size() const { return size_; }
  int arrivalRanks() const { return size_ <= kMaxArrivalRanks ? size_ : 0; }
  int tracks() const;

 private:
  std::string path_;
  int rank_;
  int size_;
  std::int64_t clockOffsetNs_;
  std::vector<CallRecord> calls_;
  std::vector<std::int64_t> arrivals_;  // kCallCapacity x arrivalRanks()
  std::vector<SpanRecord> spans_;
  std::atomic<std::uint64_t> callsClaimed_{0};
  std::atomic<std::uint64_t> spansClaimed_{0};
  mutable std::mutex mutex_;  // attach/detach and summaries only
  int tracks_ = 0;
  int attached_ = 0;
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
