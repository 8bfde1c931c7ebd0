#include "root_task.h"

#include <climits>
#include <cstdint>
#include <exception>

#include "errors.h"

namespace ringsync::trainer {

void shareFailure(Communicator& comm, bool failed, ErrorCode code, const std::string& message) {
  int firstFailing = failed ? comm.rank() : INT_MAX;
  comm.allreduce(&firstFailing, &firstFailing, 1, DataType::kInt32, ReduceOp::kMin);
  if (firstFailing == INT_MAX) return;
  std::uint64_t header[2] = {static_cast<std::uint64_t>(code), message.size()};  // code, message length
  comm.broadcast(header, 2, DataType::kUInt64, firstFailing);
  std::string text = message;
  text.resize(header[1]);
  comm.broadcast(text.data(), text.size(), DataType::kUInt8, firstFailing);
  throw CollectiveFailure(static_cast<ErrorCode>(header[0]), "rank " + std::to_string(firstFailing) + ": " + text);
}

void runOnRoot(Communicator& comm, const std::function<void()>& task) {
  bool failed = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  if (comm.rank() == 0) {
    try {
      task();
    } catch (const Error& error) {
      failed = true;
      code = error.code();
      message = error.what();
    } catch (const std::exception& error) {
      failed = true;
      message = error.what();
    }
  }
  shareFailure(comm, failed, code, message);
}

}  // namespace ringsync::trainer
