#include "ringsync/errors.h"

namespace ringsync {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kMismatch: return "MismatchError";
    case ErrorCode::kTimeout: return "TimeoutError";
    case ErrorCode::kAborted: return "AbortedError";
    case ErrorCode::kNonFinite: return "NonFiniteError";
    case ErrorCode::kBackend: return "BackendError";
    case ErrorCode::kInternal: return "InternalError";
  }
  return "Error";
}

}  // namespace ringsync
