// RINGSYNC_CHECK_NCCL(call): every NCCL call goes through it. On failure it throws BackendError
// naming the call, file:line, NCCL's name for the result and ncclGetLastError's description
// (which says what actually went wrong: "Duplicate GPU detected", a peer's failure, ...).
#pragma once

#include <string>

#include <nccl.h>

#include "cuda/check_call.h"
#include "ringsync/errors.h"

namespace ringsync::detail {

inline std::string ncclErrorText(ncclResult_t code) {
  std::string text = ncclGetErrorString(code);
  const char* last = ncclGetLastError(nullptr);  // the argument is unused by NCCL
  if (last && *last) text += " (" + std::string(last) + ")";
  return text;
}

[[noreturn]] inline void throwNcclError(const char* call, const char* file, int line, ncclResult_t code) {
  throw BackendError(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                     ncclErrorText(code));
}

inline bool ncclSucceeded(ncclResult_t code) { return code == ncclSuccess; }

}  // namespace ringsync::detail

#define RINGSYNC_CHECK_NCCL(call) \
  RINGSYNC_CHECK_CALL(call, ::ringsync::detail::ncclSucceeded, ::ringsync::detail::throwNcclError)
