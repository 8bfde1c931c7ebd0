// RINGSYNC_CHECK_MPI(call): every MPI call goes through it. On failure it throws BackendError
// naming the call, file:line and MPI's own message (the library's communicators use
// MPI_ERRORS_RETURN, so failures come back as codes instead of aborting the job).
#pragma once

#include <string>

#include <mpi.h>

#include "ringsync/errors.h"

namespace ringsync::detail {

std::string mpiErrorString(int code);
[[noreturn]] void throwMpiError(const char* call, const char* file, int line, int code);

}  // namespace ringsync::detail

#define RINGSYNC_CHECK_MPI(call)                                                   \
  do {                                                                             \
    const int ringsync_mpi_rc_ = (call);                                           \
    if (ringsync_mpi_rc_ != MPI_SUCCESS)                                           \
      ::ringsync::detail::throwMpiError(#call, __FILE__, __LINE__, ringsync_mpi_rc_); \
  } while (0)
