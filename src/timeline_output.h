// The timeline as Chrome trace JSON (the "JSON Object Format" of the Trace Event Format, which
// Perfetto and chrome://tracing load): one process per rank of MPI_COMM_WORLD; in it one thread per
// communicator (named with its world ranks), one per communicator that ran device work (NCCL,
// timed by CUDA events), and two for the GradientAverager (its steps: markReady marks and the
// synchronize() wait; its buckets: pack, exchange, unpack). Times are microseconds on world rank
// 0's clock (each process's records shifted onto it, clock_offset.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "timeline.h"

namespace ringsync::detail {

// Track ids of the averager's rows (communicators are 0, 1, ...).
inline constexpr int kAveragerStepTrack = 100;
inline constexpr int kAveragerBucketTrack = 101;
// Device rows: communicator k's device work (CUDA events) is on track kDeviceTrackBase + k.
inline constexpr int kDeviceTrackBase = 200;

// This process's events as the text of a JSON array (what a rank sends to world rank 0), its
// times shifted by `shiftNs` (this host's steady clock -> world rank 0's).
std::string traceEvents(const Timeline& timeline, std::int64_t shiftNs = 0);

// What the file's "otherData" gathers from this process, as the text of a JSON object: the
// straggler summaries of the communicators it was rank 0 of, and what its rings dropped.
std::string traceSummary(const Timeline& timeline);

// The whole file: the events of every part (traceEvents' arrays, "" for a rank that sent none)
// and, as "otherData", every part's traceSummary ("" for none) merged, for a job of `ranks`.
std::string traceFile(const std::vector<std::string>& parts, const std::vector<std::string>& summaries, int ranks,
                      int ranksInFile);

// Writes `content` to `path` through a temporary file and a rename, so a reader never sees half a
// file. Returns false (and leaves nothing behind) when it cannot.
bool writeFileAtomically(const std::string& path, const std::string& content);

}  // namespace ringsync::detail
