// GradientAverager's step: markReady counts a bucket down and wakes the progress thread when it
// completes; synchronize waits for the last bucket and resets the step. Construction and the
// first call's checks are here too; the progress thread itself is in gradient_averager_progress.cc.
#include "gradient_averager_impl.h"

#include <chrono>
#include <string>

#include "ringsync/mpi_environment.h"
#include "src/core_access.h"

namespace ringsync {
namespace {

constexpr std::size_t kMissingNamed = 8;  // how many unmarked gradients an error lists

bool overlapPossible(const Communicator& comm, const detail::Logger& logger) {
  if (comm.mpiThreadLevel() >= MPI_THREAD_MULTIPLE) return true;
  static std::once_flag warned;  // once per process, not once per averager or step
  std::call_once(warned, [&] {
    logger.warn(std::string("GradientAverager: MPI provides ") + threadLevelName(comm.mpiThreadLevel()) +
                "; overlapping communication with backward needs MPI_THREAD_MULTIPLE (initialise MPI with "
                "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or ringsync::MpiEnvironment). Buckets run "
                "inside synchronize() instead: fused, not overlapped.");
  });
  return false;
}

std::string describePlan(const std::vector<detail::Bucket>& buckets, const detail::AveragerSettings& s,
                         std::size_t gradients, bool overlap) {
  std::size_t bytes = 0, inPlace = 0;
  for (const detail::Bucket& b : buckets) {
    bytes += b.bytes();
    if (b.contiguousData != nullptr) ++inPlace;
  }
  return "GradientAverager: " + std::to_string(gradients) + " gradients, " + std::to_string(bytes) + " bytes in " +
         std::to_string(buckets.size()) + " buckets (" + std::to_string(inPlace) +
         " all-reduced in place), bucketBytes=" + std::to_string(s.bucketBytes) +
         " firstBucketBytes=" + std::to_string(s.firstBucketBytes) + " op=" + reduceOpName(s.op) +
         (s.compressFp16 ? " fp16 on the wire" : "") + (overlap ? ", overlapped with backward" : ", not overlapped");
}

}  // namespace

GradientAverager::Impl::Impl(const Communicator& comm, std::vector<GradientBuffer> gradients,
                             const GradientAveragerOptions& options)
    : comm_(comm.duplicate()),
      logger_(comm.options().logLevel, comm.rank()),
      settings_(detail::resolveSettings(options, comm.options())),
      gradients_(detail::checkGradients(gradients)) {
  buckets_ = detail::planBuckets(gradients_, {settings_.bucketBytes, settings_.firstBucketBytes});
  bucketOf_ = detail::bucketOfGradient(buckets_, gradients_.size());
  bool anyDevice = false;
  for (const detail::Bucket& b : buckets_) {
    bucketMembers_.push_back(b.members.size());
    anyDevice = anyDevice || b.onDevice;
  }
  const detail::RunnerContext context{&buckets_, &gradients_, settings_.op, settings_.compressFp16};
  hostRunner_ = detail::makeHostRunner(context);
  if (anyDevice) deviceRunner_ = detail::makeDeviceRunner(context);
  overlap_ = options.overlap && overlapPossible(comm_, logger_);
  marked_.assign(gradients_.size(), false);
  pending_ = bucketMembers_;
  readyAt_.resize(buckets_.size());
  timings_.resize(buckets_.size());
  stats_.buckets = buckets_.size();
  timeline_ = detail::Timeline::current();
  if (comm_.rank() == 0 && logger_.enabled(LogLevel::kInfo))
    logger_.info(describePlan(buckets_, settings_, gradients_.size(), overlap_));
}

GradientAverager::Impl::~Impl() { shutdown(); }

void GradientAverager::Impl::shutdown() noexcept {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    workReady_.notify_all();
    // Waits at most for the bucket being all-reduced, which ends by RINGSYNC_TIMEOUT_SECONDS.
    thread_.join();
  }
  if (deviceRunner_) {
    try {
      deviceRunner_->finishStep(comm_.options().timeoutSeconds);
    } catch (...) {
      // Nothing to report from a destructor. A timeout aborts the communicator (its NCCL kernel
      // then ends), so the device work ends either way.
      abortCommunicator("the GradientAverager was destroyed while its device buckets did not complete");
    }
  }
  detail::CoreAccess::of(comm_).averagerStepEnds();  // a step abandoned mid-way ends here
}

void GradientAverager::Impl::abortCommunicator(const std::string& reason) noexcept {
  detail::CoreAccess::of(comm_).abortAfterFailure(reason);
}

void GradientAverager::Impl::ensureUsable() const {
  if (!failed_) return;
  if (failureCode_ == ErrorCode::kMismatch) throw MismatchError(failureMessage_);
  throw AbortedError("this GradientAverager cannot be used any more (" + failureMessage_ + "); create a new one");
}

void GradientAverager::Impl::ensureAgreed() {
  if (agreed_) return;
  try {
    detail::checkSameGradientsOnAllRanks(comm_, gradients_, settings_);
  } catch (const Error& error) {
    failed_ = true;
    failureCode_ = error.code() == ErrorCode::kMismatch ? ErrorCode::kMismatch : ErrorCode::kAborted;
    failureMessage_ = error.what();
    throw;
  }
  agreed_ = true;
  // From here on only the progress thread touches comm_ (thread start orders the check before it).
  if (overlap_) thread_ = std::thread([this] { progressLoop(); });
}

void GradientAverager::Impl::markReady(std::size_t index, CUstream_st* stream) {
  ensureUsable();
  if (index >= gradients_.size())
    throw InvalidArgument("GradientAverager::markReady: index=" + std::to_string(index) + " is out of range (" +
                          std::to_string(gradients_.size()) + " gradients registered)");
  if (marked_[index])
    throw InvalidArgument("GradientAverager::markReady: gradient " + std::to_string(index) +
                          " was already marked ready in this step; call synchronize() before marking it again");
  ensureAgreed();
  // A step with device buckets is an NCCL epoch of this averager's own communicator (device_epochs.h).
  if (markedCount_ == 0 && deviceRunner_) detail::CoreAccess::of(comm_).averagerStepBegins();
  marked_[index] = true;
  ++markedCount_;
  if (timeline_) timeline_->instant(detail::SpanKind::kMarkReady, index);
  if (gradients_[index].onDevice) deviceRunner_->noteReady(index, stream);
  if (!overlap_) return;
  const std::size_t bucket = bucketOf_[index];
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    complete = --pending_[bucket] == 0;
    if (complete) readyAt_[bucket] = std::chrono::steady_clock::now();
  }
  if (complete) workReady_.notify_one();
}

void GradientAverager::Impl::checkAllMarked() const {
  if (markedCount_ == gradients_.size()) return;
  std::string names;
  std::size_t named = 0;
  for (std::size_t g = 0; g < gradients_.size() && named < kMissingNamed; ++g)
    if (!marked_[g]) names += (named++ ? ", " : "") + std::to_string(g);
  const std::size_t missing = gradients_.size() - markedCount_;
  if (missing > named) names += ", ...";
  throw InvalidArgument("GradientAverager::synchronize: " + std::to_string(missing) +
                        " gradients were not marked ready in this step (" + names +
                        "); call markReady for each, or averageAll()");
}

void GradientAverager::Impl::synchronize() {
  ensureUsable();
  ensureAgreed();
  checkAllMarked();
  const detail::TimelineSpan waiting(timeline_.get(), detail::SpanKind::kSynchronize, stats_.steps);
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error = overlap_ ? waitForBuckets() : runAllBuckets();
  if (!error && deviceRunner_) {
    try {
      deviceRunner_->finishStep(comm_.options().timeoutSeconds);
    } catch (const TimeoutError& timeout) {
      abortCommunicator(timeout.what());
      error = std::current_exception();
    } catch (...) {
      error = std::current_exception();
    }
  }
  finishStep(error, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void GradientAverager::Impl::averageAll() {
  ensureUsable();
  // Backward order, so that with overlap each bucket starts as soon as it is complete.
  for (std::size_t g = gradients_.size(); g-- > 0;)
    if (!marked_[g]) markReady(g, nullptr);
  synchronize();
}

void GradientAverager::Impl::finishStep(std::exception_ptr error, double seconds) {
  detail::CoreAccess::of(comm_).averagerStepEnds();
  marked_.assign(marked_.size(), false);
  markedCount_ = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_ = bucketMembers_;
    next_ = 0;
    error_ = nullptr;
  }
  ++stats_.steps;
  lastStep_ = timings_;
  stats_.lastSynchronizeSeconds = seconds;
  stats_.totalSynchronizeSeconds += seconds;
  if (!error) return;
  // A failure that aborted the communicator (timeout, transport) leaves the averager unusable;
  // one found from the fingerprints (mismatch, non-finite input) leaves every rank in step.
  if (comm_.aborted()) {
    failed_ = true;
    failureCode_ = ErrorCode::kAborted;
    failureMessage_ = comm_.abortReason();
  }
  std::rethrow_exception(error);
}

}  // namespace ringsync
