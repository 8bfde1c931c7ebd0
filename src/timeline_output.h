// The timeline as Chrome trace JSON (the "JSON Object Format" of the Trace Event Format, which
// Perfetto and chrome://tracing load): one process per rank; in it one thread per communicator,
// one per communicator that ran device work (NCCL, timed by CUDA events), and two for the
// GradientAverager (its steps: markReady marks and the synchronize() wait; its buckets: pack,
// exchange, unpack). Times are microseconds on the common clock (clock_offset.h).
#pragma once

#include <string>
#include <vector>

#include "timeline.h"

namespace ringsync::detail {

// Track ids of the averager's rows (communicators are 0, 1, ...).
inline constexpr int kAveragerStepTrack = 100;
inline constexpr int kAveragerBucketTrack = 101;
// Device rows: communicator k's device work (CUDA events) is on track kDeviceTrackBase + k.
inline constexpr int kDeviceTrackBase = 200;

// This rank's events as the text of a JSON array (what a rank sends to rank 0).
std::string traceEvents(const Timeline& timeline);

// The whole file: the events of every part (traceEvents' arrays, "" for a rank that sent none)
// and, as "otherData", what the timeline summarised (its summaries are JSON objects' text).
std::string traceFile(const std::vector<std::string>& parts, const Timeline& timeline, int ranksInFile);

// Writes `content` to `path` through a temporary file and a rename, so a reader never sees half a
// file. Returns false (and leaves nothing behind) when it cannot.
bool writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace ringsync::detail
