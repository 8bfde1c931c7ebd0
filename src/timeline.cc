#include "timeline.h"

#include <algorithm>

#include <type_traits>
#include <utility>

#include "clock_offset.h"

namespace ringsync::detail {
namespace {

std::mutex registryMutex;
std::shared_ptr<Timeline> registry;  // the process's timeline, from its first record to MPI_Finalize

// The bucket whose collectives this thread is running (a GradientAverager progress thread).
thread_local SpanRecord* openBucket = nullptr;

template <typename Ring, typename Record = typename std::remove_reference_t<Ring>::value_type>
auto inClaimOrder(Ring& ring, std::uint64_t claimed) {
  using Pointer = std::conditional_t<std::is_const_v<Ring>, const Record*, Record*>;
  const std::uint64_t capacity = ring.size();
  const std::uint64_t first = claimed > capacity ? claimed - capacity : 0;
  std::vector<Pointer> records;
  records.reserve(static_cast<std::size_t>(claimed - first));
  for (std::uint64_t i = first; i < claimed; ++i) records.push_back(&ring[static_cast<std::size_t>(i % capacity)]);
  return records;
}

}  // namespace

std::shared_ptr<Timeline> Timeline::open(const std::string& path, int worldRank, int worldSize) {
  std::lock_guard<std::mutex> lock(registryMutex);
  if (!registry) registry = std::make_shared<Timeline>(path, worldRank, worldSize);
  return registry;
}

std::shared_ptr<Timeline> Timeline::current() {
  std::lock_guard<std::mutex> lock(registryMutex);
  return registry;
}

void Timeline::release() {
  std::lock_guard<std::mutex> lock(registryMutex);
  registry.reset();
}

Timeline::Timeline(std::string path, int rank, int size)
    : path_(std::move(path)),
      rank_(rank),
      size_(size),
      calls_(kCallCapacity),
      arrivals_(kCallCapacity * static_cast<std::size_t>(arrivalRanks())),
      spans_(kSpanCapacity) {}

void Timeline::addTrack(int track, std::string label) {
  std::lock_guard<std::mutex> lock(mutex_);
  tracks_.push_back({track, std::move(label)});
}

std::vector<TimelineTrack> Timeline::tracks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tracks_;
}

void Timeline::addSummary(std::string json) {
  std::lock_guard<std::mutex> lock(mutex_);
  summaries_.push_back(std::move(json));
}

std::vector<std::string> Timeline::summaries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return summaries_;
}

void Timeline::commitCall(const CallRecord& record, const std::int64_t* arrivals) {
  const std::size_t slot = static_cast<std::size_t>(callsClaimed_.fetch_add(1, std::memory_order_relaxed) %
                                                    kCallCapacity);
  calls_[slot] = record;
  const auto ranks = static_cast<std::size_t>(arrivalRanks());
  if (ranks > 0 && record.arrivalCount > 0 && arrivals != nullptr)
    std::copy(arrivals, arrivals + ranks, arrivals_.data() + slot * ranks);
}

void Timeline::noteCallOnThisThread(const CallRecord& record) {
  SpanRecord* bucket = openBucket;
  if (bucket == nullptr) return;
  if (bucket->exchangeStartNs == 0) bucket->exchangeStartNs = record.startNs;
  bucket->exchangeEndNs = record.endNs != 0 ? record.endNs : record.startNs;
}

void Timeline::instant(SpanKind kind, std::uint64_t index) { endSpan(beginSpan(kind, index)); }

SpanRecord* Timeline::beginSpan(SpanKind kind, std::uint64_t index) {
  const std::size_t slot = static_cast<std::size_t>(spansClaimed_.fetch_add(1, std::memory_order_relaxed) %
                                                    kSpanCapacity);
  SpanRecord& span = spans_[slot];
  span = SpanRecord{};
  span.kind = kind;
  span.index = index;
  span.startNs = steadyNowNs();
  return &span;
}

void Timeline::endSpan(SpanRecord* span) {
  span->endNs = span->kind == SpanKind::kMarkReady ? span->startNs : steadyNowNs();
}

std::vector<const CallRecord*> Timeline::calls() const { return inClaimOrder(calls_, callsClaimed_.load()); }
std::vector<CallRecord*> Timeline::calls() { return inClaimOrder(calls_, callsClaimed_.load()); }
std::vector<const SpanRecord*> Timeline::spans() const { return inClaimOrder(spans_, spansClaimed_.load()); }

const std::int64_t* Timeline::arrivalsOf(const CallRecord* record) const {
  if (record->arrivalCount == 0 || record->lastRank < 0) return nullptr;
  return arrivals_.data() + static_cast<std::size_t>(record - calls_.data()) * static_cast<std::size_t>(arrivalRanks());
}

std::uint64_t Timeline::droppedCalls() const {
  const std::uint64_t claimed = callsClaimed_.load();
  return claimed > kCallCapacity ? claimed - kCallCapacity : 0;
}

std::uint64_t Timeline::droppedSpans() const {
  const std::uint64_t claimed = spansClaimed_.load();
  return claimed > kSpanCapacity ? claimed - kSpanCapacity : 0;
}

TimelineSpan::TimelineSpan(Timeline* timeline, SpanKind kind, std::uint64_t index) : timeline_(timeline) {
  if (timeline_ == nullptr) return;
  span_ = timeline_->beginSpan(kind, index);
  if (kind == SpanKind::kBucket) {
    outer_ = openBucket;
    openBucket = span_;
  }
}

TimelineSpan::~TimelineSpan() {
  if (span_ == nullptr) return;
  if (span_->kind == SpanKind::kBucket) openBucket = outer_;
  timeline_->endSpan(span_);
}

}  // namespace ringsync::detail
