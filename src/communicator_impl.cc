#include "communicator_impl.h"

#include <algorithm>
#include <vector>

#include "call_check.h"
#include "collectives/mpi_check.h"
#include "ringsync/errors.h"

namespace ringsync {
namespace {

// FNV-1a over the options that change algorithms or message boundaries: ranks must agree on them.
std::uint32_t hashConfig(const Options& o) {
  std::uint32_t hash = 2166136261u;
  auto mix = [&](std::uint64_t value) {
    for (int i = 0; i < 8; ++i) {
      hash ^= static_cast<std::uint32_t>((value >> (8 * i)) & 0xffu);
      hash *= 16777619u;
    }
  };
  mix(o.ringSegmentBytes);
  mix(o.smallBytes);
  mix(static_cast<std::uint64_t>(o.algorithm));
  mix(o.checkCalls ? 1 : 0);
  return hash;
}

// The direct exchange is one message per peer and a reduction of n payloads: only worth it for few
// ranks. Above this the ring carries small messages too.
constexpr int kDirectMaxRanks = 16;

}  // namespace

Communicator::Impl::Impl(MPI_Comm parent, const Options& opts) : options(opts) {
  options.validate();
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw BackendError("ringsync::Communicator needs an initialised MPI (call MPI_Init_thread, or create a "
                       "ringsync::MpiEnvironment first)");
  if (parent == MPI_COMM_NULL) throw InvalidArgument("Communicator: comm is MPI_COMM_NULL");
  RINGSYNC_CHECK_MPI(MPI_Comm_dup(parent, &comm));
  RINGSYNC_CHECK_MPI(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(comm, &size));
  agreeOnSettings();
  MPI_Comm node = MPI_COMM_NULL;
  RINGSYNC_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  RINGSYNC_CHECK_MPI(MPI_Comm_rank(node, &localRank));
  RINGSYNC_CHECK_MPI(MPI_Comm_size(node, &localSize));
  RINGSYNC_CHECK_MPI(MPI_Comm_free(&node));
  RINGSYNC_CHECK_MPI(MPI_Query_thread(&threadLevel));

  logger = detail::Logger(options.logLevel, rank);
  configHash = hashConfig(options);
  ring = {options.ringSegmentBytes, options.ringDepth};
  if (size > 1) ringScratch.reserve(static_cast<std::size_t>(ring.depth) * ring.segmentBytes);
  // Shared-memory slots as large as a round may ever be (RINGSYNC_SMALL_BYTES only decides which
  // calls take the direct round; the split all-reduce needs the room whatever it says). Across
  // nodes only direct rounds carry data, up to the point-to-point limit unless direct is forced.
  std::size_t sharedPayload = 0, pointToPointPayload = 0;
  if (size <= kDirectMaxRanks) {
    sharedPayload = Options::kMaxSmallBytes;
    pointToPointPayload = options.algorithm == Algorithm::kDirect
                              ? Options::kMaxSmallBytes
                              : std::min(options.smallBytes, Options::kPointToPointSmallBytes);
  }
  exchange = std::make_unique<detail::HeaderExchange>(comm, rank, size, sharedPayload, pointToPointPayload);
  device = detail::makeDevicePath({comm, rank, size, localRank, &options, &logger});
  if (rank == 0 && logger.enabled(LogLevel::kInfo))
    logger.info("communicator of " + std::to_string(size) + " ranks; " + options.describe());
}

void Communicator::Impl::agreeOnSettings() {
  const detail::SettingsRecord mine = detail::settingsRecord(options);
  std::vector<detail::SettingsRecord> all(static_cast<std::size_t>(size));
  const int rc = MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm);
  try {
    if (rc != MPI_SUCCESS) detail::throwMpiError("MPI_Allgather(settings)", __FILE__, __LINE__, rc);
    detail::checkSameSettings(all);  // every rank sees the same records: all throw or none does
  } catch (...) {
    MPI_Comm_free(&comm);  // the destructor does not run for a constructor that throws
    throw;
  }
}

Communicator::Impl::~Impl() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (isAborted) {
    // Receives abandoned by the failed call may still complete into this memory: never free it.
    ringScratch.abandon();
    exchange.release();
  }
  device.reset();
  if (!finalized && comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

void Communicator::Impl::ensureUsable() const {
  if (isAborted)
    throw AbortedError("this ringsync::Communicator was aborted and cannot be used (" + abortReason +
                       "); create a new one");
}

void Communicator::Impl::abort(const std::string& reason) noexcept {
  if (isAborted) return;
  isAborted = true;
  abortReason = reason;
  if (device) device->abort();
  logger.log(LogLevel::kError, "communicator aborted: " + reason);
}

detail::CallHeader Communicator::Impl::nextHeader(detail::CollectiveKind kind, std::size_t count, int type, int op,
                                                  int root) {
  detail::CallHeader header;
  header.sequence = sequence++;
  header.count = count;
  header.kind = static_cast<std::int32_t>(kind);
  header.dataType = type;
  header.op = op;
  header.root = root;
  header.configHash = configHash;
  return header;
}

detail::Deadline Communicator::Impl::deadlineFor(const detail::CallHeader& header) const {
  const detail::Logger* log = &logger;
  return detail::Deadline(header, options.timeoutSeconds, options.stallWarnSeconds,
                          [log](const std::string& message) { log->warn("stalled: " + message); });
}

void Communicator::Impl::agree(const detail::CallHeader& header, detail::Deadline& deadline) {
  exchange->run(comm, header, nullptr, 0, deadline);
  if (options.checkCalls) detail::checkSameCall(*exchange);
  detail::checkFiniteInputs(*exchange);
}

detail::Route Communicator::Impl::route(const char* call, const void* send, const void* recv) {
  const detail::MemoryKind sendKind = device->classify(send);
  const detail::MemoryKind recvKind = send == recv ? sendKind : device->classify(recv);
  detail::RouteInputs in{call, sendKind, recvKind, options.backend, false, {}};
  if (in.send == detail::MemoryKind::kDevice && in.recv == detail::MemoryKind::kDevice) {
    try {
      in.ncclUsable = device->ncclUsable(&in.ncclUnusableWhy);  // the first call bootstraps NCCL (collective)
    } catch (const Error& error) {
      // A failed or timed-out bootstrap leaves peers out of step, like any failed collective.
      if (error.code() != ErrorCode::kInvalidArgument) abort(error.what());
      throw;
    }
  }
  return detail::chooseRoute(in);
}

void Communicator::Impl::notePlacement(const detail::CallHeader& header, detail::Route r, const char* algorithm) {
  lastRoute = r;
  lastAlgorithm = algorithm;
  if (logger.enabled(LogLevel::kInfo))
    logger.info(describeCall(header) + " on " + (r == detail::Route::kHostRing ? "host buffers" : "device " +
                std::to_string(device->device())) + ": backend " + detail::routeName(r) + ", algorithm " + algorithm);
}

}  // namespace ringsync
