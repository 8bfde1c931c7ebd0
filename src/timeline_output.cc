#include "timeline_output.h"

#include <cstdio>

#include <unistd.h>

#include "collectives/call_header.h"
#include "ringsync/types.h"

namespace ringsync::detail {
namespace {

// Microseconds with nanosecond digits (the trace format's unit).
std::string micros(std::int64_t ns) {
  char text[40];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1000.0);
  return text;
}

std::string prefix(const char* name, const char* phase, int pid, int tid, std::int64_t startNs) {
  return std::string("{\"name\":") + jsonString(name) + ",\"ph\":\"" + phase + "\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"ts\":" + micros(startNs);
}

std::string complete(const std::string& name, int pid, int tid, std::int64_t startNs, std::int64_t endNs,
                     const std::string& args) {
  return prefix(name.c_str(), "X", pid, tid, startNs) + ",\"dur\":" + micros(endNs > startNs ? endNs - startNs : 0) +
         ",\"args\":{" + args + "}}";
}

std::string metadata(const char* what, int pid, int tid, const std::string& args) {
  return std::string("{\"name\":\"") + what + "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{" + args + "}}";
}

void append(std::string& out, const std::string& event) {
  if (!out.empty()) out += ",\n";
  out += event;
}

std::string callArgs(const Timeline& timeline, const CallRecord& call) {
  std::string args = "\"call\":" + std::to_string(call.sequence) + ",\"count\":" + std::to_string(call.count);
  if (call.dataType >= 0) args += ",\"type\":" + jsonString(dataTypeName(static_cast<DataType>(call.dataType)));
  if (call.op >= 0) args += ",\"op\":" + jsonString(reduceOpName(static_cast<ReduceOp>(call.op)));
  if (call.root >= 0) args += ",\"root\":" + std::to_string(call.root);
  args += ",\"bytes\":" + std::to_string(call.bytes) + ",\"backend\":" + jsonString(call.backend) +
          ",\"algorithm\":" + jsonString(call.algorithm) + ",\"memory\":\"" + (call.onDevice ? "device" : "host") + "\"";
  if (call.failed || call.endNs == 0) args += ",\"failed\":true";
  if (const std::int64_t* arrivals = timeline.arrivalsOf(&call)) {
    // Each rank's arrival after the first one's: the last rank's is how long the first waited.
    std::int64_t first = arrivals[0];
    for (int r = 1; r < call.arrivalCount; ++r) first = arrivals[r] < first ? arrivals[r] : first;
    args += ",\"last_to_arrive\":" + std::to_string(call.lastRank) + ",\"arrival_us\":[";
    for (int r = 0; r < call.arrivalCount; ++r) args += (r ? "," : "") + micros(arrivals[r] - first);
    args += "]";
  }
  return args;
}

void appendCalls(std::string& out, const Timeline& timeline) {
  const int pid = timeline.rank();
  for (const CallRecord* call : timeline.calls()) {
    std::string name = collectiveName(static_cast<CollectiveKind>(call->kind));
    if (call->failed || call->endNs == 0) name += " (failed)";
    append(out, complete(name, pid, call->track, call->startNs, call->endNs, callArgs(timeline, *call)));
    if (call->deviceStartNs != 0 && call->deviceEndNs != 0)
      append(out, complete(std::string(collectiveName(static_cast<CollectiveKind>(call->kind))) + " (device)", pid,
                           kDeviceTrackBase + call->track, call->deviceStartNs, call->deviceEndNs,
                           "\"call\":" + std::to_string(call->sequence)));
  }
}

void appendSpans(std::string& out, const Timeline& timeline) {
  const int pid = timeline.rank();
  for (const SpanRecord* span : timeline.spans()) {
    const std::string index = std::to_string(span->index);
    switch (span->kind) {
      case SpanKind::kMarkReady:
        append(out, prefix("markReady", "i", pid, kAveragerStepTrack, span->startNs) +
                        ",\"s\":\"t\",\"args\":{\"gradient\":" + index + "}}");
        break;
      case SpanKind::kSynchronize:
        append(out, complete("synchronize", pid, kAveragerStepTrack, span->startNs, span->endNs, "\"step\":" + index));
        break;
      case SpanKind::kBucket: {
        const std::int64_t end = span->endNs != 0 ? span->endNs : span->startNs;
        append(out, complete("bucket " + index, pid, kAveragerBucketTrack, span->startNs, end, "\"bucket\":" + index));
        if (span->exchangeStartNs == 0) break;  // nothing was sent (an empty bucket)
        const std::string args = "\"bucket\":" + index;
        append(out, complete("pack", pid, kAveragerBucketTrack, span->startNs, span->exchangeStartNs, args));
        append(out, complete("exchange", pid, kAveragerBucketTrack, span->exchangeStartNs, span->exchangeEndNs, args));
        append(out, complete("unpack", pid, kAveragerBucketTrack, span->exchangeEndNs, end, args));
        break;
      }
    }
  }
}

}  // namespace

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string traceEvents(const Timeline& timeline) {
  const int pid = timeline.rank();
  std::string out;
  append(out, metadata("process_name", pid, 0, "\"name\":\"rank " + std::to_string(pid) + "\""));
  append(out, metadata("process_sort_index", pid, 0, "\"sort_index\":" + std::to_string(pid)));
  for (int track = 0; track < timeline.tracks(); ++track)
    append(out, metadata("thread_name", pid, track, "\"name\":\"communicator " + std::to_string(track) + "\""));
  std::vector<bool> onDevice(static_cast<std::size_t>(timeline.tracks()), false);
  for (const CallRecord* call : timeline.calls())
    if (call->deviceEndNs != 0 && call->track < timeline.tracks()) onDevice[static_cast<std::size_t>(call->track)] = true;
  for (int track = 0; track < timeline.tracks(); ++track)
    if (onDevice[static_cast<std::size_t>(track)])
      append(out, metadata("thread_name", pid, kDeviceTrackBase + track,
                           "\"name\":\"communicator " + std::to_string(track) + ": device (CUDA events)\""));
  append(out, metadata("thread_name", pid, kAveragerStepTrack, "\"name\":\"averager: markReady, synchronize\""));
  append(out, metadata("thread_name", pid, kAveragerBucketTrack, "\"name\":\"averager: buckets\""));
  appendCalls(out, timeline);
  appendSpans(out, timeline);
  return out;
}

std::string traceFile(const std::vector<std::string>& parts, const Timeline& timeline, int ranksInFile) {
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  for (const std::string& part : parts) {
    if (part.empty()) continue;
    if (!first) out += ",\n";
    out += part;
    first = false;
  }
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"ranks\":" + std::to_string(timeline.size()) +
         ",\"ranks_in_file\":" + std::to_string(ranksInFile) + ",\"dropped_calls\":" +
         std::to_string(timeline.droppedCalls()) + ",\"dropped_averager_events\":" +
         std::to_string(timeline.droppedSpans()) + ",\"stragglers\":[";
  const std::vector<std::string> summaries = timeline.summaries();
  for (std::size_t i = 0; i < summaries.size(); ++i) out += (i ? "," : "") + summaries[i];
  return out + "]}}\n";
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
