#include "communicator_impl.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "call_check.h"
#include "collectives/mpi_check.h"
#include "collectives/reduce_kernels.h"
#include "collectives/ring_config.h"
#include "collectives/ring_pipeline.h"
#include "device_epochs.h"
#include "ringsync/errors.h"

namespace ringsync {

Communicator::Impl::Impl(MPI_Comm parent, const Options& options)
    : options_(options), check_(options.checkCalls, options.checkFinite) {
  options_.validate();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw BackendError(
        "ringsync::Communicator needs an initialised MPI (call MPI_Init_thread, or create a "
        "ringsync::MpiEnvironment first)");
  if (parent == MPI_COMM_NULL) throw InvalidArgument("Communicator: comm is MPI_COMM_NULL");
  RINGSYNC_CHECK_MPI(MPI_Comm_dup(parent, &comm_));
  RINGSYNC_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  agreeOnSettings();
  MPI_Comm node = MPI_COMM_NULL;
  RINGSYNC_CHECK_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(node, &localRank_));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(node, &localSize_));
  RINGSYNC_CHECK_MPI(MPI_Query_thread(&threadLevel_));

  logger_ = detail::Logger(options_.logLevel, rank_);
  // Collective: every rank finds the same layout (the node communicator is kept or freed there).
  // The ring among the nodes always crosses them: it takes the across-node pipelining (options.h).
  const detail::RingConfig acrossNodes{options_.ringSegmentBytesAcrossNodes, options_.ringDepthAcrossNodes};
  hierarchy_ = detail::NodeHierarchy::build(comm_, node, detail::roundCapacity(localSize_, options_), acrossNodes,
                                            &hierarchyBlocker_);
  // The flat ring too, as soon as one of its edges crosses a node. Not the chain broadcast: its
  // data flows one way, so a rendezvous reply never queues behind bulk data, and uncapped the
  // smaller segments cost it 7-13% at 16-64 MiB (bench/RESULTS.md section 13).
  // (Between two single-rank nodes it sends a chunk of 192-400 KiB whole: ring_config.h.)
  chain_ = detail::RingConfig{options_.ringSegmentBytes, options_.ringDepth};
  ring_ = hierarchyBlocker_ == detail::HierarchyBlocker::kOneNode ? chain_ : acrossNodes;
  wholeChunks_ = size_ == 2 && hierarchyBlocker_ != detail::HierarchyBlocker::kOneNode;
  if (rank_ == 0 && logger_.enabled(LogLevel::kDebug))
    logger_.log(LogLevel::kDebug,
                std::string("hierarchical all-reduce: ") + detail::hierarchyBlockerText(hierarchyBlocker_));
  if (size_ > 1) ringScratch_.reserve(detail::ringScratchBytes(ring_, wholeChunks_));
  rounds_ = std::make_unique<detail::RoundTransport>(comm_, rank_, size_, detail::roundCapacity(size_, options_));
  // A /dev/shm too small for full-sized rounds, said once per process (shared_slots.h).
  if (logger_.enabled(LogLevel::kInfo))
    if (const std::string notice = detail::SharedSlots::takeShortageNotice(); !notice.empty()) logger_.info(notice);
  device_ = detail::makeDevicePath({comm_, rank_, size_, localRank_, &options_, &logger_});
  tracer_.start(comm_, rank_, size_, localSize_ == size_, options_);
  if (tracer_.measuring()) check_.observeArrivals(&tracer_);
  if (rank_ == 0 && logger_.enabled(LogLevel::kInfo))
    logger_.info("communicator of " + std::to_string(size_) + " ranks; " + options_.describe());
}

void Communicator::Impl::agreeOnSettings() {
  const detail::SettingsRecord mine = detail::settingsRecord(options_);
  std::vector<detail::SettingsRecord> all(static_cast<std::size_t>(size_));
  const int rc = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_);
  try {
    if (rc != MPI_SUCCESS) detail::throwMpiError("MPI_Allgather(settings)", __FILE__, __LINE__, rc);
    detail::checkSameSettings(all);  // every rank sees the same records: all throw or none does
  } catch (...) {
    MPI_Comm_free(&comm_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

Communicator::Impl::~Impl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  // Writing the timeline waits this long at most for a peer's part: a failed peer must not hold it up.
  const double mergeSeconds = options_.timeoutSeconds > 0 ? std::min(options_.timeoutSeconds, 10.0) : 10.0;
  tracer_.finish(comm_, !aborted_ && !finalized, mergeSeconds, logger_);
  if (aborted_) {
    // Receives abandoned by the failed call (point-to-point receives MPI_Cancel could not stop, an
    // MPI_Iallreduce, which cannot be cancelled at all) may still complete into this memory: never
    // free it. (The device layer keeps its staging memory for the same reason: DevicePath::abort.)
    ringScratch_.abandon();
    packScratch_.abandon();
    ringPartials_.abandon();
    pieceScratch_.abandon();
    doublingBuffers_.message.abandon();
    doublingBuffers_.incoming.abandon();
    doublingBuffers_.spare.abandon();
    rounds_.release();
    if (hierarchy_) hierarchy_->abandon();
  }
  hierarchy_.reset();
  device_.reset();
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void Communicator::Impl::ensureUsable() const {
  if (aborted_)
    throw AbortedError("this ringsync::Communicator was aborted and cannot be used (" + abortReason_ +
                       "); create a new one");
}

void Communicator::Impl::abort(const std::string& reason) noexcept {
  if (aborted_) return;
  aborted_ = true;
  abortReason_ = reason;
  tracer_.flushAfterFailure();
  if (device_) device_->abort();
  logger_.log(LogLevel::kError, "communicator aborted: " + reason);
}

void Communicator::Impl::averagerStepBegins() noexcept {
  detail::DeviceEpochs::averagerStepBegins();
  ownAveragerStep_ = true;
}

void Communicator::Impl::averagerStepEnds() noexcept {
  if (!ownAveragerStep_) return;
  ownAveragerStep_ = false;
  detail::DeviceEpochs::averagerStepEnds();
}

detail::MemoryKind Communicator::Impl::memoryOf(const detail::Call& c) {
  const detail::CollectiveTraits& kind = c.traits();
  if (kind.shape == detail::BufferShape::kNone) return detail::MemoryKind::kHost;
  const char* call = kind.name;
  const void* send = c.send;
  const void* recv = c.recv;
  const detail::PointerPlace sendPlace = detail::describePointer(send);
  const detail::PointerPlace recvPlace = send == recv ? sendPlace : detail::describePointer(recv);
  const detail::MemoryKind memory = detail::checkMemory(call, sendPlace.kind, recvPlace.kind, options_.backend);
  if (memory != detail::MemoryKind::kDevice) return memory;
  if (detail::DeviceEpochs::averagerStepsInFlight() - (ownAveragerStep_ ? 1 : 0) > 0)
    throw InvalidArgument(std::string(call) +
                          ": a GradientAverager's device step is in flight in this process (from its first markReady "
                          "to synchronize(), or for a ShardedGradientAverager from its first markReady to the end of "
                          "the parameters' gather); NCCL forbids using two communicators on one GPU at once (their "
                          "kernels can wait on each other across ranks), so device collectives must wait for it");
  // NCCL runs on one GPU per rank, and the staged copies and events are made there: a buffer on
  // another GPU is the caller's mistake, named before anything is sent.
  const int mine = device_->device();
  const char* sendName = send == recv ? "buf" : "send";
  for (const auto& [name, place] : {std::pair{sendName, sendPlace}, std::pair{"recv", recvPlace}})
    if (mine >= 0 && place.device >= 0 && place.device != mine)
      throw InvalidArgument(std::string(call) + ": " + name + " is on GPU " + std::to_string(place.device) +
                            ", but this communicator uses GPU " + std::to_string(mine) +
                            " (RINGSYNC_CUDA_DEVICE, or the local rank modulo the visible GPUs); pass buffers on GPU " +
                            std::to_string(mine));
  return memory;
}

detail::CallHeader Communicator::Impl::nextHeader(const detail::Call& call, detail::MemoryKind memory) {
  detail::CallHeader header;
  header.sequence = sequence_++;
  header.kind = call.kind;
  const detail::CollectiveTraits& kind = call.traits();
  if (kind.shape != detail::BufferShape::kNone) {
    header.count = call.count;
    header.dataType = call.type;
  }
  if (kind.reduces) header.op = call.op;
  if (kind.rooted) header.root = call.root;
  header.memory = memory;
  tracer_.begin(header);
  return header;
}

detail::Deadline Communicator::Impl::deadlineFor(const detail::CallHeader& header) const {
  const detail::Logger* log = &logger_;
  detail::IdleWaitPolicy wait;
  wait.spinOnly = options_.spinWait;
  return detail::Deadline(
      header, options_.timeoutSeconds, options_.stallWarnSeconds,
      [log](const std::string& message) { log->warn("stalled: " + message); }, wait);
}

detail::AlgorithmContext Communicator::Impl::context(const detail::CallHeader& header, detail::Deadline& deadline) {
  const bool rooted = detail::traitsOf(header.kind).rooted;  // runs along the chain from the root
  return {comm_,
          rank_,
          size_,
          *rounds_,
          ringScratch_,
          rooted ? chain_ : ring_,
          header,
          deadline,
          check_,
          hierarchy_.get(),
          &doublingBuffers_,
          !rooted && wholeChunks_,
          &ringPartials_,
          &pieceScratch_,
          options_.networkLatencyBytes};
}

detail::Selection Communicator::Impl::select(const detail::Call& call) const {
  return detail::chooseAlgorithm({call.kind, call.count, call.elementBytes(), size_, rounds_->sharedMemory(),
                                  rounds_->maxPayloadBytes(), options_, hierarchyBlocker_,
                                  hierarchy_ ? hierarchy_->nodeRounds->maxPayloadBytes() : std::size_t{0},
                                  hierarchy_            ? hierarchy_->nodes
                                  : localSize_ == size_ ? 0
                                                        : size_});
}

void Communicator::Impl::notePlacement(const detail::CallHeader& header, detail::Route route, const char* algorithm,
                                       const char* reason) {
  lastRoute_ = route;
  lastAlgorithm_ = algorithm;
  tracer_.end(detail::routeName(route), algorithm, route != detail::Route::kHostRing);
  if (!logger_.enabled(LogLevel::kInfo)) return;
  const Placement placement = lastPlacement();
  std::string line = describeCall(header) + " on " +
                     (placement.device >= 0 ? "device " + std::to_string(placement.device)
                                            : std::string("host buffers")) +
                     ": backend " + placement.backend + ", algorithm " + placement.algorithm;
  std::string why;
  if (route == detail::Route::kStaged && !device_->ncclUsable(&why))
    line += " (device -> pinned host -> host " + placement.algorithm + " -> device; NCCL not used: " + why + ")";
  // Why this algorithm: the reason the one selection function gave (algorithm_selection.cc).
  line += std::string(" (") + reason + ")";
  if (route != detail::Route::kNccl && std::string_view(algorithm) == "ring") {
    line += detail::ringTrafficNote(header, size_, wholeChunks_);
  }
  logger_.info(line);
}

}  // namespace ringsync
