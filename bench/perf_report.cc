#include "perf_report.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

namespace ringsync::bench {
namespace {

// nccl-tests' time column: more digits for short times, none for long ones.
std::string formatTime(double seconds) {
  const double us = seconds * 1e6;
  char text[32];
  std::snprintf(text, sizeof text, us >= 10000.0 ? "%7.0f" : us >= 100.0 ? "%7.1f" : "%7.2f", us);
  return text;
}

std::string formatBlock(const PerfMeasure& m, bool check) {
  char text[96];
  const std::string wrong = check ? std::to_string(m.wrong) : "N/A";
  std::snprintf(text, sizeof text, "  %s  %6.2f  %6.2f  %6s", formatTime(m.seconds).c_str(), m.algbw, m.busbw,
                wrong.c_str());
  return text;
}

nlohmann::ordered_json jsonMeasure(const PerfMeasure& m) {
  return {{"time_us", m.seconds * 1e6}, {"algbw", m.algbw}, {"busbw", m.busbw}, {"wrong", m.wrong}};
}

double ratio(const PerfRow& row) {
  return row.baseline && row.baseline->busbw > 0 ? row.outOfPlace.busbw / row.baseline->busbw : 0;
}

}  // namespace

PerfReport::PerfReport(PerfSetup setup, std::FILE* out) : setup_(std::move(setup)), out_(out) {}

void PerfReport::printHeader() const {
  const PerfSetup& s = setup_;
  const std::string sets = s.bufferSets > 1
                               ? ", " + std::to_string(s.bufferSets) + " separately allocated pairs in turn"
                               : "";
  std::fprintf(out_, "# %s: ringsync %s, %d ranks (%d on this node), backend %s, %s buffers%s\n", s.tool.c_str(),
               s.collective.c_str(), s.ranks, s.localRanks, s.backend.c_str(), s.buffers.c_str(), sets.c_str());
  std::fprintf(out_, "# type %s, op %s, root %d, iterations %d, warm-up %d, check %d%s\n", s.type.c_str(), s.op.c_str(),
               s.root, s.iterations, s.warmup, s.check ? 1 : 0,
               s.compare ? (", compared with " + s.baselineName + " on the same buffers").c_str() : "");
  std::fprintf(out_, "# settings: %s\n", s.settings.c_str());
  if (!s.environment.empty()) std::fprintf(out_, "# environment: %s\n", s.environment.c_str());
  std::fprintf(out_, "# MPI: %s\n", s.mpiLibrary.c_str());
  std::fprintf(out_, "# command: %s\n", s.command.c_str());
  if (!s.note.empty()) std::fprintf(out_, "# note: %s\n", s.note.c_str());
  std::fprintf(out_, "#\n");
  const std::string baselineTitle = s.compare ? "    " + s.baselineName + " (out-of-place)" : "";
  const char* baselineNames = s.compare ? "     time   busbw  ratio" : "";
  const char* baselineUnits = s.compare ? "     (us)  (GB/s)   (bw)" : "";
  std::fprintf(out_, "# %54s %28s %31s%s\n", "", "out-of-place", "in-place", baselineTitle.c_str());
  std::fprintf(out_,
               "# %10s  %12s  %8s  %6s  %6s     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong%s\n",
               "size", "count", "type", "redop", "root", baselineNames);
  std::fprintf(out_,
               "# %10s  %12s  %8s  %6s  %6s     (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)        %s\n",
               "(B)", "(elements)", "", "", "", baselineUnits);
  std::fflush(out_);
}

void PerfReport::add(const PerfRow& row) {
  rows_.push_back(row);
  std::string line;
  char prefix[96];
  std::snprintf(prefix, sizeof prefix, "%12zu  %12zu  %8s  %6s  %6d", row.bytes, row.count, setup_.type.c_str(),
                setup_.op.c_str(), setup_.root);
  line = prefix + formatBlock(row.outOfPlace, setup_.check) + formatBlock(row.inPlace, setup_.check);
  if (row.baseline) {
    char tail[64];
    std::snprintf(tail, sizeof tail, "  %s  %6.2f  %5.2f", formatTime(row.baseline->seconds).c_str(),
                  row.baseline->busbw, ratio(row));
    line += tail;
  }
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
}

std::size_t PerfReport::printFooter() const {
  std::size_t wrong = 0;
  double busbw = 0, baselineBusbw = 0;
  for (const PerfRow& row : rows_) {
    wrong += row.outOfPlace.wrong + row.inPlace.wrong + (row.baseline ? row.baseline->wrong : 0);
    busbw += row.outOfPlace.busbw + row.inPlace.busbw;
    if (row.baseline) baselineBusbw += row.baseline->busbw;
  }
  const double rows = rows_.empty() ? 1.0 : static_cast<double>(rows_.size());
  std::fprintf(out_, "# Out of bounds values : %zu %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
  std::fprintf(out_, "# Avg bus bandwidth    : %g\n", busbw / (2 * rows));
  if (setup_.compare)
    std::fprintf(out_, "# Avg %s bus bandwidth : %g\n", setup_.baselineName.c_str(), baselineBusbw / rows);
  std::fprintf(out_, "#\n");
  std::fflush(out_);
  return wrong;
}

// Keys in the order written; non-finite figures (a 0-second baseline) as null (nlohmann's dump()).
// The command line and environment are the user's: bytes that are not UTF-8 are written as U+FFFD
// rather than losing the measurements to an exception (dump() throws on them by default).
void PerfReport::writeJson(const std::string& path) const {
  std::ofstream file(path);
  if (!file) throw std::runtime_error("--json " + path + ": cannot open the file for writing");
  const PerfSetup& s = setup_;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const PerfRow& row : rows_) {
    nlohmann::ordered_json entry = {{"bytes", row.bytes},
                                    {"count", row.count},
                                    {"out_of_place", jsonMeasure(row.outOfPlace)},
                                    {"in_place", jsonMeasure(row.inPlace)}};
    if (row.baseline) {
      entry["baseline"] = jsonMeasure(*row.baseline);
      entry["ratio"] = ratio(row);
    }
    rows.push_back(std::move(entry));
  }
  const nlohmann::ordered_json report = {{"tool", s.tool},
                                         {"collective", s.collective},
                                         {"baseline", s.baselineName},
                                         {"ranks", s.ranks},
                                         {"backend", s.backend},
                                         {"buffers", s.buffers},
                                         {"buffer_sets", s.bufferSets},
                                         {"type", s.type},
                                         {"op", s.op},
                                         {"root", s.root},
                                         {"iterations", s.iterations},
                                         {"warmup", s.warmup},
                                         {"settings", s.settings},
                                         {"environment", s.environment},
                                         {"mpi_library", s.mpiLibrary},
                                         {"command", s.command},
                                         {"rows", std::move(rows)}};
  file << report.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  if (!file) throw std::runtime_error("--json " + path + ": writing failed");
}

}  // namespace ringsync::bench
