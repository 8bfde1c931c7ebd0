#include "mpi_polling.h"

#include <climits>
#include <sstream>
#include <thread>
#include <utility>

#include "ringsync/errors.h"

namespace ringsync::torch_backend {
namespace {

constexpr int kSpinPolls = 200;  // ~20 us of MPI_Test
constexpr auto kYieldFor = std::chrono::milliseconds(1);
constexpr auto kSleep = std::chrono::microseconds(50);

}  // namespace

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void checkMpi(int code, const char* what) {
  if (code != MPI_SUCCESS)
    throw BackendError(std::string("ringsync backend: ") + what + " failed: " + mpiErrorText(code));
}

void IdleWait::pause() {
  if (spin_ || ++polls_ < kSpinPolls) return;
  const auto now = std::chrono::steady_clock::now();
  if (polls_ == kSpinPolls) idleSince_ = now;
  if (now - idleSince_ < kYieldFor) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(kSleep);
  }
}

void IdleWait::progressed() { polls_ = 0; }

MpiDeadline::MpiDeadline(const Options& options, std::string call)
    : call_(std::move(call)),
      seconds_(options.timeoutSeconds),
      end_(std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(
               std::chrono::duration<double>(options.timeoutSeconds > 0 ? options.timeoutSeconds : 0))),
      idle_(options.spinWait) {}

bool MpiDeadline::expired() const { return seconds_ > 0 && std::chrono::steady_clock::now() >= end_; }

void MpiDeadline::timedOut(const std::string& waitingFor) const {
  std::ostringstream message;
  message << "ringsync backend: " << call_ << " timed out after " << seconds_ << " s waiting for " << waitingFor
          << " (RINGSYNC_TIMEOUT_SECONDS, or the group's timeout=)";
  throw TimeoutError(message.str());
}

void MpiDeadline::wait(MPI_Request& request, const std::function<std::string()>& waitingFor, MPI_Status* status) {
  for (int done = 0;;) {
    checkMpi(MPI_Test(&request, &done, status ? status : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) break;
    if (expired()) timedOut(waitingFor());
    idle_.pause();
  }
  idle_.progressed();
}

ByteCount::ByteCount(std::size_t bytes) {
  if (bytes <= static_cast<std::size_t>(INT_MAX)) {
    count_ = static_cast<int>(bytes);
    return;
  }
  // count_ = 1 of { bytes / kBlock blocks of kBlock bytes, then the rest }.
  constexpr std::size_t kBlock = std::size_t{1} << 20;
  const std::size_t blocks = bytes / kBlock, rest = bytes % kBlock;
  if (blocks > static_cast<std::size_t>(INT_MAX))
    throw InvalidArgument("ringsync backend: a message of " + std::to_string(bytes) + " bytes is too large for MPI");
  MPI_Datatype block = MPI_DATATYPE_NULL, whole = MPI_DATATYPE_NULL;
  checkMpi(MPI_Type_contiguous(static_cast<int>(kBlock), MPI_BYTE, &block), "MPI_Type_contiguous");
  const int lengths[2] = {static_cast<int>(blocks), static_cast<int>(rest)};
  const MPI_Aint offsets[2] = {0, static_cast<MPI_Aint>(blocks * kBlock)};
  const MPI_Datatype types[2] = {block, MPI_BYTE};
  const int code = MPI_Type_create_struct(rest ? 2 : 1, lengths, offsets, types, &whole);
  MPI_Type_free(&block);
  checkMpi(code, "MPI_Type_create_struct");
  checkMpi(MPI_Type_commit(&whole), "MPI_Type_commit");
  type_ = whole;
  count_ = 1;
  derived_ = true;
}

ByteCount::~ByteCount() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (derived_ && !finalized) MPI_Type_free(&type_);
}

}  // namespace ringsync::torch_backend
