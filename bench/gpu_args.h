// What the GPU benches share: the flags they take, -b/-e (sizes with the K, M, G suffixes of the
// other bench binaries, perf_args.h), -n calls per timed repetition, -r timed repetitions, and the
// median they report.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "perf_args.h"

namespace ringsync::bench {

struct GpuSweepArgs {
  std::size_t minBytes;
  std::size_t maxBytes;
  int iterations;
  int repetitions;
};

// Adds the shared flags to `app` (defaults: `args` as given), parses argv into `args` and the
// tool's own flags; --help, or a flag CLI11 rejects, exits with CLI11's message.
inline void parseGpuSweepArgs(CLI::App& app, int argc, char** argv, GpuSweepArgs& args) {
  std::string minBytes = std::to_string(args.minBytes), maxBytes = std::to_string(args.maxBytes);
  app.add_option("-b", minBytes, "smallest size in bytes");
  app.add_option("-e", maxBytes, "largest size in bytes");
  app.add_option("-n", args.iterations, "calls per timed repetition")->check(CLI::PositiveNumber);
  app.add_option("-r", args.repetitions, "timed repetitions (median)")->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    std::exit(app.exit(error));
  }
  args.minBytes = parseSize(minBytes);
  args.maxBytes = parseSize(maxBytes);
}

// The median of timed repetitions (the upper middle one for an even count).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace ringsync::bench
