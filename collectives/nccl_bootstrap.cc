// bootstrapNccl: every rank probes its GPU, the ranks agree (over MPI) whether NCCL can serve all
// of them, and only then call ncclCommInitRankConfig together. Agreeing first matters twice: a rank that
// cannot init would leave the others waiting inside NCCL's init, and ranks that disagree about
// NCCL would send one collective through NCCL and the other through the host ring.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/mpi_check.h"
#include "cuda/cuda_check.h"
#include "cuda/device_memory.h"
#include "nccl_check.h"
#include "nccl_communicator.h"
#include "nccl_settle.h"
#include "ringsync/errors.h"

namespace ringsync::detail {
namespace {

enum Status : std::int32_t { kReady = 0, kNoDevice, kDeviceFailed, kUniqueIdFailed, kInitFailed };

// What each rank tells every other one (fixed size: sent as MPI_BYTE).
struct ProbeRecord {
  std::int32_t status = kReady;
  std::int32_t device = -1;
  unsigned char uuid[16] = {};
  char why[160] = {};
};

void setWhy(ProbeRecord& record, Status status, const std::string& why) {
  record.status = status;
  std::strncpy(record.why, why.c_str(), sizeof record.why - 1);
}

ProbeRecord probeLocal(const NcclBootstrapInputs& in) {
  ProbeRecord record;
  record.device = in.device;
  if (in.device < 0) {
    setWhy(record, kNoDevice, in.deviceWhy.empty() ? "no CUDA device" : in.deviceWhy);
    return record;
  }
  try {
    cuda::DeviceGuard guard(in.device);
    cudaDeviceProp properties{};
    RINGSYNC_CHECK_CUDA(cudaGetDeviceProperties(&properties, in.device));
    std::memcpy(record.uuid, properties.uuid.bytes, sizeof record.uuid);
  } catch (const Error& error) {
    setWhy(record, kDeviceFailed, "device " + std::to_string(in.device) + ": " + error.what());
  }
  return record;
}

// Polls a non-blocking MPI collective so that a rank that never joins becomes a TimeoutError.
// A collective request cannot be cancelled: on timeout its buffers are deliberately leaked
// (`keepAlive`), as MPI may still write into them.
template <typename Buffers> void waitFor(MPI_Request& request, const NcclBootstrapInputs& in, const char* what,
                                         std::unique_ptr<Buffers>& keepAlive) {
  const std::string waitingFor = std::string("the other ranks in the NCCL bootstrap (") + what +
                                 "; every rank must pass device buffers to the same collective)";
  for (;;) {
    int done = 0;
    RINGSYNC_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    try {
      in.deadline->idleWaitingFor(waitingFor.c_str());
    } catch (const TimeoutError&) {
      keepAlive.release();
      throw;
    }
  }
}

std::vector<ProbeRecord> allgatherRecords(const NcclBootstrapInputs& in, const ProbeRecord& mine, const char* what) {
  struct Buffers {
    ProbeRecord sent;
    std::vector<ProbeRecord> received;
  };
  auto buffers = std::make_unique<Buffers>(Buffers{mine, std::vector<ProbeRecord>(static_cast<std::size_t>(in.size))});
  MPI_Request request = MPI_REQUEST_NULL;
  RINGSYNC_CHECK_MPI(MPI_Iallgather(&buffers->sent, sizeof(ProbeRecord), MPI_BYTE, buffers->received.data(),
                                    sizeof(ProbeRecord), MPI_BYTE, in.comm, &request));
  waitFor(request, in, what, buffers);
  return buffers->received;
}

std::string uuidText(const unsigned char* uuid) {
  static const char kHex[] = "0123456789abcdef";
  std::string text = "GPU-";
  for (int i = 0; i < 16; ++i) {
    text += kHex[uuid[i] >> 4];
    text += kHex[uuid[i] & 15];
    if (i == 3 || i == 5 || i == 7 || i == 9) text += '-';
  }
  return text;
}

// The same verdict on every rank, from the same records: empty when every rank is ready.
std::string firstFailure(const std::vector<ProbeRecord>& records) {
  for (std::size_t r = 0; r < records.size(); ++r)
    if (records[r].status != kReady) return "rank " + std::to_string(r) + ": " + records[r].why;
  return {};
}

std::string duplicateGpu(const std::vector<ProbeRecord>& records) {
  for (std::size_t a = 0; a < records.size(); ++a)
    for (std::size_t b = a + 1; b < records.size(); ++b)
      if (std::memcmp(records[a].uuid, records[b].uuid, sizeof records[a].uuid) == 0)
        return "ranks " + std::to_string(a) + " and " + std::to_string(b) + " share one GPU (" +
               uuidText(records[a].uuid) +
               "); NCCL needs a GPU of its own per rank (\"Duplicate GPU detected\"). "
               "Ranks sharing a GPU wait for its time slices on every small staged call (~270 us at 2 ranks "
               "on an H100): start CUDA MPS (nvidia-cuda-mps-control -d) before mpirun to avoid that";
  return {};
}

// Non-blocking init (nccl_settle.h), polled under the call's deadline: a rank that fails inside
// NCCL's init reports it through the allgather below, and the ranks it leaves waiting for its
// connections time out instead of blocking forever. On timeout the half-made communicator is
// aborted and the TimeoutError goes up (the caller aborts the ringsync communicator).
ProbeRecord initRank(const NcclBootstrapInputs& in, const ncclUniqueId& id, ncclComm_t* comm) {
  ProbeRecord result;
  try {
    cuda::DeviceGuard guard(in.device);  // NCCL's init uses the current device
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc = ncclCommInitRankConfig(comm, in.size, id, in.rank, &config);
    if (rc == ncclInProgress)
      rc = awaitNcclSettled(*comm, *in.deadline, "ncclCommInitRankConfig: NCCL's init connecting to the other ranks");
    if (rc != ncclSuccess) setWhy(result, kInitFailed, "ncclCommInitRankConfig failed: " + ncclErrorText(rc));
  } catch (const TimeoutError&) {
    if (*comm) ncclCommAbort(*comm);
    *comm = nullptr;
    throw;
  } catch (const Error& error) {
    setWhy(result, kInitFailed, error.what());
  }
  return result;
}

// Rank 0's ncclUniqueId, or why it could not make one (every rank then declines NCCL alike).
struct IdMessage {
  ncclUniqueId id{};
  ProbeRecord outcome;
};

IdMessage broadcastId(const NcclBootstrapInputs& in) {
  auto message = std::make_unique<IdMessage>();
  if (in.rank == 0) {
    const ncclResult_t rc = ncclGetUniqueId(&message->id);
    if (rc != ncclSuccess) setWhy(message->outcome, kUniqueIdFailed, "ncclGetUniqueId failed: " + ncclErrorText(rc));
  }
  MPI_Request request = MPI_REQUEST_NULL;
  RINGSYNC_CHECK_MPI(MPI_Ibcast(message.get(), sizeof(IdMessage), MPI_BYTE, 0, in.comm, &request));
  waitFor(request, in, "MPI_Bcast of the ncclUniqueId", message);
  return *message;
}

}  // namespace

std::unique_ptr<NcclCommunicator> bootstrapNccl(const NcclBootstrapInputs& in, std::string* whyNot) {
  const ProbeRecord mine = probeLocal(in);
  const std::vector<ProbeRecord> probes = allgatherRecords(in, mine, "MPI_Allgather of the GPU probes");
  std::string why = firstFailure(probes);
  if (why.empty()) why = duplicateGpu(probes);
  if (!why.empty()) {
    if (whyNot) *whyNot = why;
    return nullptr;
  }
  // Only now, with every rank ready: ncclGetUniqueId starts rank 0's bootstrap thread and socket,
  // which a declined NCCL would leak.
  const IdMessage id = broadcastId(in);
  why = firstFailure({id.outcome});  // "rank 0: ..." on every rank
  if (!why.empty()) {
    if (whyNot) *whyNot = why;
    return nullptr;
  }

  ncclComm_t comm = nullptr;
  const ProbeRecord initResult = initRank(in, id.id, &comm);
  why = firstFailure(allgatherRecords(in, initResult, "MPI_Allgather of the ncclCommInitRankConfig results"));
  if (!why.empty()) {
    if (comm) ncclCommAbort(comm);
    if (whyNot) *whyNot = why;
    return nullptr;
  }
  return std::make_unique<NcclCommunicator>(comm, in.device, in.deadline->timeoutSeconds());
}

}  // namespace ringsync::detail
