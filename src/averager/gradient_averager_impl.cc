// GradientAverager's (and ShardedGradientAverager's) construction: the checks, the plan, the
// runners, the cross-rank agreement, and shutting down. The step itself is in
// gradient_averager_step.cc, the sharded gather in gradient_averager_gather.cc, the progress
// thread in gradient_averager_progress.cc.
#include "gradient_averager_impl.h"

#include <chrono>
#include <string>

#include "overlap_policy.h"
#include "ringsync/mpi_environment.h"
#include "src/core_access.h"

namespace ringsync {
namespace {

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
                         std::size_t gradients, bool overlap, bool given) {
  std::size_t bytes = 0, inPlace = 0;
  for (const detail::Bucket& b : buckets) {
    bytes += b.bytes();
    if (b.contiguousData != nullptr) ++inPlace;
  }
  return std::string(s.who()) + ": " + std::to_string(gradients) + " gradients, " + std::to_string(bytes) +
         " bytes in " + std::to_string(buckets.size()) + " buckets (" + std::to_string(inPlace) + " back to back), " +
         (s.sharded ? "reduce-scattered, parameters all-gathered" : "all-reduced") +
         (given ? std::string(", buckets given (groups)")
                : ", bucketBytes=" + std::to_string(s.bucketBytes) +
                      " firstBucketBytes=" + std::to_string(s.firstBucketBytes)) +
         " op=" + reduceOpName(s.op) + (s.compressFp16 ? " fp16 on the wire" : "") +
         (overlap ? ", overlapped with backward" : ", not overlapped");
}

// GradientAveragerStats::wireBytesPerStep: the ring's count per bucket.
std::size_t wireBytesPerStep(const std::vector<detail::Bucket>& buckets, const detail::ShardPlan* shards,
                             bool compressFp16, int ranks) {
  if (ranks <= 1) return 0;
  const std::size_t n = static_cast<std::size_t>(ranks);
  std::size_t total = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    const detail::Bucket& bucket = buckets[b];
    const std::size_t elementBytes = dataTypeSize(bucket.type);
    const bool halved = compressFp16 && bucket.type == DataType::kFloat32 && !bucket.onDevice;
    const std::size_t wireElementBytes = halved ? 2 : elementBytes;
    if (shards == nullptr) {
      total += 2 * (n - 1) * bucket.count * wireElementBytes / n;
    } else {
      total += (n - 1) * shards->block(b) * (wireElementBytes + elementBytes);  // reduce-scatter + all-gather
    }
  }
  return total;
}

}  // namespace

GradientAverager::Impl::Impl(const Communicator& comm, std::vector<GradientBuffer> gradients,
                             const GradientAveragerOptions& options)
    : comm_(comm.duplicate()),
      logger_(comm.options().logLevel, comm.rank()),
      settings_(detail::resolveSettings(options, comm.options(), false)),
      gradients_(detail::checkGradients(gradients, settings_.who())) {
  setUp(options);
}

GradientAverager::Impl::Impl(const Communicator& comm, std::vector<GradientBuffer> gradients,
                             std::vector<GradientBuffer> parameters, const GradientAveragerOptions& options)
    : comm_(comm.duplicate()), logger_(comm.options().logLevel, comm.rank()), settings_{} {
  // Every rank learns whether every rank accepted its arguments before the agreement's
  // collective: a rank that rejected its own would otherwise leave its peers waiting in it.
  std::exception_ptr rejected;
  try {
    settings_ = detail::resolveSettings(options, comm.options(), true);
    gradients_ = detail::checkGradients(gradients, settings_.who());
    parameters_ = detail::checkParameters(parameters, gradients_, settings_.who());
    setUp(options);
  } catch (const Error&) {
    rejected = std::current_exception();
  }
  std::vector<std::uint64_t> flags(static_cast<std::size_t>(comm_.size()));
  const std::uint64_t mine = rejected ? 1 : 0;
  comm_.allgather(&mine, flags.data(), 1, DataType::kUInt64);
  if (rejected) std::rethrow_exception(rejected);
  std::string ranks;
  for (std::size_t r = 0; r < flags.size(); ++r)
    if (flags[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
  if (!ranks.empty())
    throw MismatchError("ShardedGradientAverager: rank(s) " + ranks +
                        " rejected their arguments (each raised the error naming it); nothing was exchanged");
  ensureAgreed();
}

void GradientAverager::Impl::setUp(const GradientAveragerOptions& options) {
  detail::checkGroups(options.groups, gradients_, settings_.who());
  buckets_ = options.groups.empty()
                 ? detail::planBuckets(gradients_, {settings_.bucketBytes, settings_.firstBucketBytes})
                 : detail::bucketsFromGroups(gradients_, options.groups);
  bucketOf_ = detail::bucketOfGradient(buckets_, gradients_.size());
  if (settings_.sharded) shards_ = std::make_unique<detail::ShardPlan>(buckets_, parameters_, comm_.size());
  taskCount_ = buckets_.size() * (settings_.sharded ? 2 : 1);
  taskMembers_.resize(taskCount_);
  bool anyDevice = false;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    taskMembers_[b] = buckets_[b].members.size();
    if (settings_.sharded) taskMembers_[gatherTask(b)] = buckets_[b].members.size();
    anyDevice = anyDevice || buckets_[b].onDevice;
  }
  const detail::RunnerContext context{&buckets_,     &gradients_,  settings_.op, settings_.compressFp16,
                                      shards_.get(), &parameters_, comm_.rank()};
  hostRunner_ = detail::makeHostRunner(context);
  if (anyDevice) deviceRunner_ = detail::makeDeviceRunner(context);
  overlap_ = options.overlap.value_or(detail::overlapGains(comm_, anyDevice)) && overlapPossible(comm_, logger_);
  marked_.assign(gradients_.size(), false);
  updated_.assign(gradients_.size(), false);
  pending_ = taskMembers_;
  readyAt_.resize(taskCount_);
  timings_.resize(taskCount_);
  stats_.buckets = buckets_.size();
  stats_.wireBytesPerStep = wireBytesPerStep(buckets_, shards_.get(), settings_.compressFp16, comm_.size());
  timeline_ = detail::Timeline::current();
  if (comm_.rank() == 0 && logger_.enabled(LogLevel::kInfo))
    logger_.info(describePlan(buckets_, settings_, gradients_.size(), overlap_, !options.groups.empty()));
}

GradientAverager::Impl::~Impl() { shutdown(); }

void GradientAverager::Impl::shutdown() noexcept {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    workReady_.notify_all();
    // Waits at most for the task being run, which ends by RINGSYNC_TIMEOUT_SECONDS.
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
  throw AbortedError("this " + std::string(settings_.who()) + " cannot be used any more (" + failureMessage_ +
                     "); create a new one");
}

void GradientAverager::Impl::noteFailure(const Error& error) {
  failed_ = true;
  failureCode_ = error.code() == ErrorCode::kMismatch ? ErrorCode::kMismatch : ErrorCode::kAborted;
  failureMessage_ = error.what();
}

void GradientAverager::Impl::ensureAgreed() {
  if (agreed_) return;
  try {
    detail::checkSameGradientsOnAllRanks(comm_, gradients_, settings_, detail::hashBuckets(buckets_),
                                         shards_ ? shards_->hash() : 0);
  } catch (const Error& error) {
    noteFailure(error);
    throw;
  }
  agreed_ = true;
  // From here on only the progress thread touches comm_ (thread start orders the check before it).
  if (overlap_) thread_ = std::thread([this] { progressLoop(); });
}

}  // namespace ringsync
