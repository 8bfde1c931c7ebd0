#include "timeline_output.h"

#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "collectives/call_header.h"
#include "ringsync/types.h"

namespace ringsync::detail {
namespace {

using Json = nlohmann::ordered_json;  // keys in the order written

// Microseconds (the trace format's unit), to the nanosecond.
double micros(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

Json event(const std::string& name, const char* phase, int pid, int tid, std::int64_t startNs) {
  return {{"name", name}, {"ph", phase}, {"pid", pid}, {"tid", tid}, {"ts", micros(startNs)}};
}

Json complete(const std::string& name, int pid, int tid, std::int64_t startNs, std::int64_t endNs, Json args) {
  Json e = event(name, "X", pid, tid, startNs);
  e["dur"] = micros(endNs > startNs ? endNs - startNs : 0);
  e["args"] = std::move(args);
  return e;
}

Json metadata(const char* what, int pid, int tid, Json args) {
  return {{"name", what}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", std::move(args)}};
}

Json callArgs(const Timeline& timeline, const CallRecord& call) {
  Json args = {{"call", call.sequence}, {"count", call.count}};
  if (call.dataType >= 0) args["type"] = dataTypeName(static_cast<DataType>(call.dataType));
  if (call.op >= 0) args["op"] = reduceOpName(static_cast<ReduceOp>(call.op));
  if (call.root >= 0) args["root"] = call.root;
  args["bytes"] = call.bytes;
  args["backend"] = call.backend;
  args["algorithm"] = call.algorithm;
  args["memory"] = call.onDevice ? "device" : "host";
  if (call.failed || call.endNs == 0) args["failed"] = true;
  // Known from a round (every rank's time) or from recursive doubling's summary (the last only).
  if (call.lastRank >= 0) args["last_to_arrive"] = call.lastRank;
  if (const std::int64_t* arrivals = timeline.arrivalsOf(&call)) {
    // Each rank's arrival after the first one's: the last rank's is how long the first waited.
    std::int64_t first = arrivals[0];
    for (int r = 1; r < call.arrivalCount; ++r) first = arrivals[r] < first ? arrivals[r] : first;
    Json after = Json::array();
    for (int r = 0; r < call.arrivalCount; ++r) after.push_back(micros(arrivals[r] - first));
    args["arrival_us"] = std::move(after);
  }
  return args;
}

// A time of this process (steady clock; 0: none) on world rank 0's clock.
std::int64_t shifted(std::int64_t ns, std::int64_t shiftNs) { return ns != 0 ? ns + shiftNs : 0; }

void addCalls(Json& events, const Timeline& timeline, std::int64_t shiftNs) {
  const int pid = timeline.rank();
  for (const CallRecord* call : timeline.calls()) {
    const std::string kind = collectiveName(static_cast<CollectiveKind>(call->kind));
    const bool failed = call->failed || call->endNs == 0;
    events.push_back(complete(failed ? kind + " (failed)" : kind, pid, call->track, shifted(call->startNs, shiftNs),
                              shifted(call->endNs, shiftNs), callArgs(timeline, *call)));
    if (call->deviceStartNs != 0 && call->deviceEndNs != 0)
      events.push_back(complete(kind + " (device)", pid, kDeviceTrackBase + call->track,
                                shifted(call->deviceStartNs, shiftNs), shifted(call->deviceEndNs, shiftNs),
                                {{"call", call->sequence}}));
  }
}

void addSpans(Json& events, const Timeline& timeline, std::int64_t shiftNs) {
  const int pid = timeline.rank();
  for (const SpanRecord* stored : timeline.spans()) {
    SpanRecord copy = *stored;
    for (std::int64_t* ns : {&copy.startNs, &copy.endNs, &copy.exchangeStartNs, &copy.exchangeEndNs})
      *ns = shifted(*ns, shiftNs);
    const SpanRecord* span = &copy;
    switch (span->kind) {
      case SpanKind::kMarkReady: {
        Json mark = event("markReady", "i", pid, kAveragerStepTrack, span->startNs);
        mark["s"] = "t";
        mark["args"] = {{"gradient", span->index}};
        events.push_back(std::move(mark));
        break;
      }
      case SpanKind::kSynchronize:
        events.push_back(
            complete("synchronize", pid, kAveragerStepTrack, span->startNs, span->endNs, {{"step", span->index}}));
        break;
      case SpanKind::kBucket: {
        const std::int64_t end = span->endNs != 0 ? span->endNs : span->startNs;
        const Json args = {{"bucket", span->index}};
        events.push_back(
            complete("bucket " + std::to_string(span->index), pid, kAveragerBucketTrack, span->startNs, end, args));
        if (span->exchangeStartNs == 0) break;  // nothing was sent (an empty bucket)
        events.push_back(complete("pack", pid, kAveragerBucketTrack, span->startNs, span->exchangeStartNs, args));
        events.push_back(
            complete("exchange", pid, kAveragerBucketTrack, span->exchangeStartNs, span->exchangeEndNs, args));
        events.push_back(complete("unpack", pid, kAveragerBucketTrack, span->exchangeEndNs, end, args));
        break;
      }
    }
  }
}

}  // namespace

std::string traceEvents(const Timeline& timeline, std::int64_t shiftNs) {
  const int pid = timeline.rank();
  Json events = Json::array();
  events.push_back(metadata("process_name", pid, 0, {{"name", "rank " + std::to_string(pid)}}));
  events.push_back(metadata("process_sort_index", pid, 0, {{"sort_index", pid}}));
  const std::vector<TimelineTrack> tracks = timeline.tracks();
  for (const TimelineTrack& track : tracks)
    events.push_back(metadata("thread_name", pid, track.id, {{"name", track.label}}));
  for (const TimelineTrack& track : tracks) {
    bool onDevice = false;
    for (const CallRecord* call : timeline.calls())
      onDevice = onDevice || (call->track == track.id && call->deviceEndNs != 0);
    if (onDevice)
      events.push_back(metadata("thread_name", pid, kDeviceTrackBase + track.id,
                                {{"name", "communicator " + std::to_string(track.id) + ": device (CUDA events)"}}));
  }
  events.push_back(metadata("thread_name", pid, kAveragerStepTrack, {{"name", "averager: markReady, synchronize"}}));
  events.push_back(metadata("thread_name", pid, kAveragerBucketTrack, {{"name", "averager: buckets"}}));
  addCalls(events, timeline, shiftNs);
  addSpans(events, timeline, shiftNs);
  return events.dump();
}

std::string traceSummary(const Timeline& timeline) {
  Json stragglers = Json::array();
  for (const std::string& summary : timeline.summaries()) stragglers.push_back(Json::parse(summary));
  const Json summary = {{"stragglers", std::move(stragglers)},
                        {"dropped_calls", timeline.droppedCalls()},
                        {"dropped_averager_events", timeline.droppedSpans()}};
  return summary.dump();
}

// The parts are already JSON arrays (traceEvents' dump()): their elements are joined as text. Parsing
// them back into one tree at rank 0 cost 13x the time and 3x the memory of the whole run's output
// at 8 ranks with full rings (6.5 s, 1.7 GB), and grows with the ranks. The summaries are small.
std::string traceFile(const std::vector<std::string>& parts, const std::vector<std::string>& summaries, int ranks,
                      int ranksInFile) {
  Json stragglers = Json::array();
  std::uint64_t droppedCalls = 0, droppedSpans = 0;
  for (const std::string& text : summaries) {
    if (text.empty()) continue;
    const Json summary = Json::parse(text);
    for (const Json& straggler : summary.at("stragglers")) stragglers.push_back(straggler);
    droppedCalls += summary.at("dropped_calls").get<std::uint64_t>();
    droppedSpans += summary.at("dropped_averager_events").get<std::uint64_t>();
  }
  const Json rest = {{"displayTimeUnit", "ms"},
                     {"otherData",
                      {{"ranks", ranks},
                       {"ranks_in_file", ranksInFile},
                       {"dropped_calls", droppedCalls},
                       {"dropped_averager_events", droppedSpans},
                       {"stragglers", std::move(stragglers)}}}};
  const std::string members = rest.dump();  // "{...}": its members follow the events
  std::size_t size = members.size() + 32;
  for (const std::string& part : parts) size += part.size();
  std::string file;
  file.reserve(size);
  file += "{\"traceEvents\":[";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.size() <= 2) continue;  // "" (a rank that sent none) or "[]"
    if (!first) file += ',';
    file.append(part, 1, part.size() - 2);  // the elements, without the brackets
    first = false;
  }
  file += "],";
  file.append(members, 1, std::string::npos);
  file += '\n';
  return file;
}

bool writeFileAtomically(const std::string& path, const std::string& content) {
  const std::string temporary = path + ".tmp." + std::to_string(static_cast<long>(getpid()));
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (file == nullptr) return false;
  const bool written = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  if (std::fclose(file) != 0 || !written || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

}  // namespace ringsync::detail
