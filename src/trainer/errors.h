// The trainer's failures, in ringsync's exception family (ringsync::Error and its codes).
// A CollectiveFailure is raised by every rank at once, because the ranks agreed on it through a
// collective (rank 0 read a file and shared the verdict, or the replica checksums were compared),
// so main() can end every rank cleanly instead of aborting the job.
#pragma once

#include <string>

#include "ringsync/errors.h"

namespace ringsync::trainer {

class CollectiveFailure : public Error {
 public:
  CollectiveFailure(ErrorCode code, const std::string& message) : Error(code, message) {}
};

// The replicas' parameters differ (the message names the ranks that diverged).
class ReplicaMismatch : public CollectiveFailure {
 public:
  explicit ReplicaMismatch(const std::string& message) : CollectiveFailure(ErrorCode::kMismatch, message) {}
};

// A bad option or option combination; every rank parses the same command line, so every rank
// raises it.
class ConfigError : public CollectiveFailure {
 public:
  explicit ConfigError(const std::string& message) : CollectiveFailure(ErrorCode::kInvalidArgument, message) {}
};

}  // namespace ringsync::trainer
