#include "logging.h"

#include <cstdio>

namespace ringsync::detail {

void Logger::log(LogLevel level, const std::string& message) const {
  if (!enabled(level)) return;
  // One fprintf per line so that lines from concurrent ranks do not interleave mid-line.
  std::fprintf(stderr, "[ringsync rank %d] %s: %s\n", rank_, logLevelName(level), message.c_str());
}

void Logger::report(const std::string& message) const {
  if (!enabled(LogLevel::kWarn)) return;
  std::fprintf(stderr, "[ringsync rank %d] report: %s\n", rank_, message.c_str());
}

}  // namespace ringsync::detail
