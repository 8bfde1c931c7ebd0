// RINGSYNC_CHECK_MPI(call): every MPI call goes through it. On failure it throws BackendError
// naming the call, file:line and MPI's own message (the library's communicators use
// MPI_ERRORS_RETURN, so failures come back as codes instead of aborting the job).
#pragma once

#include <string>

#include <mpi.h>

#include "cuda/check_call.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

std::string mpiErrorString(int code);
[[noreturn]] void throwMpiError(const char* call, const char* file, int line, int code);
inline bool mpiSucceeded(int code) { return code == MPI_SUCCESS; }

}  // namespace ringsync::detail

#define RINGSYNC_CHECK_MPI(call) \
  RINGSYNC_CHECK_CALL(call, ::ringsync::detail::mpiSucceeded, ::ringsync::detail::throwMpiError)
