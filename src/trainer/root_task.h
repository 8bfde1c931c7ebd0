// Failures that all ranks learn about together. Work that only rank 0 does (reading the data set
// or a checkpoint, writing a checkpoint or the metrics file), or that may fail on some ranks only
// (making a GPU engine), ends with a collective verdict, so a failure is raised on every rank
// instead of leaving the other ranks waiting in their next collective until the deadline.
#pragma once

#include <functional>
#include <string>

#include "ringsync/communicator.h"
#include "ringsync/errors.h"

namespace ringsync::trainer {

// Collective. Each rank says whether it failed (with its code and message). If any did, every
// rank raises CollectiveFailure carrying the lowest failing rank's code and message, prefixed
// "rank r: ".
void shareFailure(Communicator& comm, bool failed, ErrorCode code, const std::string& message);

// Runs `task` on rank 0 (other ranks do nothing) and shares its verdict through shareFailure.
void runOnRoot(Communicator& comm, const std::function<void()>& task);

}  // namespace ringsync::trainer
