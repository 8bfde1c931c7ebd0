#include "straggler_stats.h"

#include <cstdio>

namespace ringsync::detail {

int StragglerStats::straggler() const {
  for (std::size_t r = 0; r < lastCount_.size(); ++r)
    if (2 * lastCount_[r] > calls_) return static_cast<int>(r);
  return -1;
}

std::string StragglerStats::report(const std::string& communicator) const {
  std::string text = "straggler report (" + communicator + ", " + std::to_string(calls_) +
                     " calls with every rank's arrival time):";
  const int slow = straggler();
  for (std::size_t r = 0; r < lastCount_.size(); ++r) {
    char line[200];
    const double share = calls_ ? 100.0 * static_cast<double>(lastCount_[r]) / static_cast<double>(calls_) : 0.0;
    std::snprintf(line, sizeof line,
                  "\n  rank %zu: last to arrive in %llu calls (%.1f%%), others waited %.6f s for it%s", r,
                  static_cast<unsigned long long>(lastCount_[r]), share, static_cast<double>(waitedNs_[r]) * 1e-9,
                  static_cast<int>(r) == slow ? "  <- straggler: last in more than half of the calls" : "");
    text += line;
  }
  return text;
}

}  // namespace ringsync::detail
