// The state behind a Communicator and its host-buffer collectives. Public methods (communicator.cc)
// check arguments and choose the route; this class sequences, fingerprints, times and runs calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <mpi.h>

#include "backend_selection.h"
#include "collectives/call_header.h"
#include "collectives/header_exchange.h"
#include "collectives/ring_allreduce.h"
#include "collectives/scratch_buffer.h"
#include "collectives/transport.h"
#include "device_path.h"
#include "logging.h"
#include "ringsync/communicator.h"
#include "ringsync/options.h"

namespace ringsync {

struct Communicator::Impl final : detail::HostCollectives {
  Impl(MPI_Comm parent, const Options& options);
  ~Impl() override;

  // Compares the settings every rank must share (collective, once, at construction); raises
  // MismatchError on every rank naming the settings and ranks that differ.
  void agreeOnSettings();
  // Raises AbortedError once a call has failed in a way that leaves peers out of step.
  void ensureUsable() const;
  // Runs `body`; a timeout or a transport failure aborts the communicator before propagating.
  template <typename Body> void guarded(Body&& body);
  void abort(const std::string& reason) noexcept;

  detail::CallHeader nextHeader(detail::CollectiveKind kind, std::size_t count, int type, int op, int root);
  detail::Deadline deadlineFor(const detail::CallHeader& header) const;
  // Exchange fingerprints with every peer and raise MismatchError / NonFiniteError on disagreement.
  void agree(const detail::CallHeader& header, detail::Deadline& deadline);

  // Host-buffer collectives (also what the staged device path runs).
  void hostAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override;
  enum class HostAlgorithm { kDirect, kSplit, kRing };
  HostAlgorithm chooseHostAllreduce(std::size_t count, DataType type) const;
  void splitAllreduce(const detail::CallHeader& header, const void* send, void* recv, std::size_t count, DataType type,
                      ReduceOp op, detail::Deadline& deadline);
  void hostBroadcast(void* buf, std::size_t count, DataType type, int root) override;
  void hostAllgather(const void* send, void* recv, std::size_t count, DataType type);
  void hostBarrier();

  // Device-buffer collectives through NCCL (with the same fingerprint check first).
  void ncclAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, CUstream_st* stream);
  void ncclBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream);

  // Device buffers staged through pinned host memory and this communicator's host collectives.
  void stagedAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                       CUstream_st* stream);
  void stagedBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream);

  detail::Route route(const char* call, const void* send, const void* recv);
  void notePlacement(const detail::CallHeader& header, detail::Route route, const char* algorithm);

  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;
  int threadLevel = MPI_THREAD_SINGLE;
  Options options;
  detail::Logger logger;
  std::uint32_t configHash = 0;
  std::uint64_t sequence = 0;
  bool isAborted = false;
  std::string abortReason;
  detail::RingConfig ring{};
  detail::ScratchBuffer ringScratch;
  std::unique_ptr<detail::HeaderExchange> exchange;
  std::unique_ptr<detail::DevicePath> device;
  detail::Route lastRoute = detail::Route::kHostRing;
  const char* lastAlgorithm = "none";
};

}  // namespace ringsync
