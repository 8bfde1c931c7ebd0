// One exception family: every failure ringsync reports is a ringsync::Error with a code.
#pragma once

#include <stdexcept>
#include <string>

namespace ringsync {

enum class ErrorCode {
  kInvalidArgument,  // bad input; nothing was sent and no buffer was touched
  kMismatch,         // ranks disagree about a collective (kind, count, type, op, root, order)
  kTimeout,          // a peer did not answer within RINGSYNC_TIMEOUT_SECONDS
  kAborted,          // the communicator failed earlier and refuses further calls
  kNonFinite,        // RINGSYNC_CHECK_FINITE found NaN/Inf in some rank's input
  kBackend,          // an MPI, CUDA, NCCL or cuBLAS call failed, or a forced backend cannot serve
  kInternal,
};

const char* errorCodeName(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& message) : Error(ErrorCode::kInvalidArgument, message) {}
};

class MismatchError : public Error {
 public:
  explicit MismatchError(const std::string& message) : Error(ErrorCode::kMismatch, message) {}
};

class TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& message) : Error(ErrorCode::kTimeout, message) {}
};

class AbortedError : public Error {
 public:
  explicit AbortedError(const std::string& message) : Error(ErrorCode::kAborted, message) {}
};

class NonFiniteError : public Error {
 public:
  explicit NonFiniteError(const std::string& message) : Error(ErrorCode::kNonFinite, message) {}
};

class BackendError : public Error {
 public:
  explicit BackendError(const std::string& message) : Error(ErrorCode::kBackend, message) {}
};

}  // namespace ringsync
