// The bench's output, in nccl-tests' shape: '#' header lines, one row per size
//   size count type redop root | time algbw busbw #wrong (out-of-place) | ... (in-place) [| MPI]
// and the footer ("# Out of bounds values : K OK|FAILED", "# Avg bus bandwidth : X"), plus the
// same rows as JSON for bench/plot.py. Only rank 0 builds a report.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace ringsync::bench {

struct PerfMeasure {
  double seconds = 0;     // mean per iteration, max over ranks
  double algbw = 0;       // GB/s (1e9), bytes / seconds
  double busbw = 0;       // algbw * the collective's bus factor
  std::size_t wrong = 0;  // elements that differ from the closed form (summed over ranks)
};

struct PerfRow {
  std::size_t bytes = 0;
  std::size_t count = 0;
  PerfMeasure outOfPlace;
  PerfMeasure inPlace;
  std::optional<PerfMeasure> baseline;  // --compare: the baseline on the same buffers, same run
};

struct PerfSetup {
  std::string tool;          // "allreduce_perf"
  std::string collective;    // "allreduce"
  std::string baselineName;  // "MPI_Allreduce", "RINGSYNC_CHECK=0"
  int ranks = 0;
  int localRanks = 0;
  std::string backend;
  std::string buffers;  // "host" / "device"
  int bufferSets = 1;   // --buffers: separately allocated send/recv pairs the calls take in turn
  std::string type;
  std::string op;  // "sum", or "none" for broadcast
  int root = -1;
  int iterations = 0;
  int warmup = 0;
  bool check = true;
  bool compare = false;
  std::string settings;     // Options::describe()
  std::string environment;  // GLIBC_TUNABLES and the like, as set
  std::string mpiLibrary;
  std::string command;
  std::string note;  // collective-specific remark for the header (may be empty)
};

class PerfReport {
 public:
  PerfReport(PerfSetup setup, std::FILE* out);
  void printHeader() const;
  void add(const PerfRow& row);  // prints the row at once, so long sweeps show progress
  // Prints the footer; returns the total number of wrong values.
  std::size_t printFooter() const;
  // Writes setup and rows as JSON; raises std::runtime_error when the file cannot be written.
  void writeJson(const std::string& path) const;

 private:
  PerfSetup setup_;
  std::FILE* out_;
  std::vector<PerfRow> rows_;
};

}  // namespace ringsync::bench
