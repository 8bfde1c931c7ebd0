// Runtime-levelled logging to stderr with a "[ringsync rank r]" prefix (RINGSYNC_LOG). The only
// place library code prints.
#pragma once

#include <string>

#include "ringsync/options.h"

namespace ringsync::detail {

class Logger {
 public:
  Logger() = default;
  Logger(LogLevel level, int rank) : level_(level), rank_(rank) {}

  bool enabled(LogLevel level) const { return static_cast<int>(level) <= static_cast<int>(level_); }
  void log(LogLevel level, const std::string& message) const;
  void warn(const std::string& message) const { log(LogLevel::kWarn, message); }
  void info(const std::string& message) const { log(LogLevel::kInfo, message); }
  // A summary asked for by a setting (the straggler report with RINGSYNC_TIMELINE): printed like a
  // warning (unless RINGSYNC_LOG=error), tagged "report".
  void report(const std::string& message) const;

 private:
  LogLevel level_ = LogLevel::kWarn;
  int rank_ = -1;
};

}  // namespace ringsync::detail
