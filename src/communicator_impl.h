// The Communicator core: the state behind a Communicator and the one path every collective takes.
//
//   Communicator::allreduce (communicator.cc)   argument checks; nothing sent on a rejection
//   Impl::allreduce                              memory kind -> fingerprint (CallHeader) -> deadline
//     host buffers:   runHost -> chooseAlgorithm (algorithm_selection.h) -> collectives/ routine,
//                     whose first round ends in the one check (call_check.h)
//     device buffers: agree on the call -> NCCL decided once (collective) -> chooseRoute
//                     -> NCCL, or the staged path (staged_path.h) around runHost
//   every failure but a mismatch found before data moved aborts the communicator (guarded).
//
// Nothing below calls up into this class; the device layer (device_path.h) supplies memory,
// streams and NCCL, not control flow.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <mpi.h>

#include "algorithm_selection.h"
#include "backend_selection.h"
#include "call_check.h"
#include "call_tracer.h"
#include "collectives/algorithms.h"
#include "collectives/node_hierarchy.h"
#include "collectives/recursive_doubling.h"
#include "collectives/round_transport.h"
#include "collectives/scattered_buffer.h"
#include "collectives/scratch_buffer.h"
#include "device_path.h"
#include "logging.h"
#include "ringsync/communicator.h"
#include "ringsync/options.h"

namespace ringsync {

class Communicator::Impl {
 public:
  Impl(MPI_Comm parent, const Options& options);
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // The collectives, after the public entry points checked their arguments.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, CUstream_st* stream);
  void broadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream);
  void allgather(const void* send, void* recv, std::size_t count, DataType type);
  void barrier();
  // In place over host memory stored as spans: the GradientAverager's buckets (core_access.h). It
  // checked and agreed on its gradients at construction, so nothing is re-checked or classified
  // here. One span, or the split all-reduce, reduces the memory where it lies (returns true); any
  // other algorithm gets the spans packed into one buffer and unpacked after (returns false).
  bool allreduceScattered(const detail::ScatteredBuffer& buffer, DataType type, ReduceOp op);

  // The GradientAverager that owns this communicator marks its device steps (device_epochs.h):
  // while one is in flight, only this communicator may start device collectives.
  void averagerStepBegins() noexcept;
  void averagerStepEnds() noexcept;

  // For a layer above whose own wait on this communicator's work failed (the GradientAverager's
  // device stream past the deadline): the same abort as a failed call. Never throws.
  void abortAfterFailure(const std::string& reason) noexcept { abort(reason); }

  // Raises AbortedError once a call has failed in a way that leaves peers out of step.
  void ensureUsable() const;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int localRank() const { return localRank_; }
  int localSize() const { return localSize_; }
  int cudaDevice() const { return device_->device(); }
  int threadLevel() const { return threadLevel_; }
  MPI_Comm comm() const { return comm_; }
  const Options& options() const { return options_; }
  std::uint64_t callCount() const { return sequence_; }
  bool aborted() const { return aborted_; }
  const std::string& abortReason() const { return abortReason_; }
  Placement lastPlacement() const {
    const bool onDevice = lastRoute_ != detail::Route::kHostRing;
    return {detail::routeName(lastRoute_), lastAlgorithm_, onDevice ? device_->device() : -1};
  }

 private:
  // Compares the settings every rank must share (collective, once, at construction); raises
  // MismatchError on every rank naming the settings and ranks that differ.
  void agreeOnSettings();
  // Runs `body`; a timeout or a transport failure aborts the communicator before propagating.
  template <typename Body> void guarded(Body&& body);
  void abort(const std::string& reason) noexcept;

  detail::MemoryKind memoryOf(const char* call, const void* send, const void* recv);
  detail::CallHeader nextHeader(detail::CollectiveKind kind, std::size_t count, int type, int op, int root,
                                detail::MemoryKind memory);
  detail::Deadline deadlineFor(const detail::CallHeader& header) const;
  detail::AlgorithmContext context(const detail::CallHeader& header, detail::Deadline& deadline);
  detail::Selection select(detail::CollectiveKind kind, std::size_t count, std::size_t elementBytes) const;

  // Host memory: choose the algorithm and run it (also what the staged path runs in between).
  void runHostAllreduce(detail::CallHeader header, const detail::AllreduceArgs& args, detail::Deadline& deadline);
  void runHostBroadcast(const detail::CallHeader& header, const detail::BroadcastArgs& args, detail::Deadline& deadline);
  // Device memory: the route, deciding NCCL first when it is undecided (after the ranks agreed).
  detail::Route deviceRoute(const char* call, const detail::CallHeader& header, detail::Deadline& deadline,
                            bool* agreed);
  void agree(const detail::CallHeader& header, detail::Deadline& deadline);
  // Placement and the RINGSYNC_LOG=info line (the reason at debug) for the call just run.
  void notePlacement(const detail::CallHeader& header, detail::Route route, const char* algorithm, const char* reason);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  int localRank_ = 0;
  int localSize_ = 1;
  int threadLevel_ = MPI_THREAD_SINGLE;
  Options options_;
  detail::Logger logger_;
  detail::FingerprintCheck check_;
  detail::CallTracer tracer_;  // arrival times, straggler report, RINGSYNC_TIMELINE
  std::uint64_t sequence_ = 0;
  bool aborted_ = false;
  bool ownAveragerStep_ = false;  // this (averager-owned) communicator's averager has a device step in flight
  std::string abortReason_;
  detail::RingConfig ring_{};   // the all-reduce ring's pipelining (across nodes: Options::*AcrossNodes)
  detail::RingConfig chain_{};  // the chain broadcast's (Options::ringSegmentBytes/ringDepth everywhere)
  // Two ranks on two nodes: the all-reduce ring sends chunks of 192-400 KiB whole (ring_config.h).
  bool wholeChunks_ = false;
  detail::ScratchBuffer ringScratch_;
  detail::DoublingBuffers doublingBuffers_;  // recursive doubling's messages (grown on first use)
  detail::ScratchBuffer packScratch_;  // allreduceScattered's packed copy, for algorithms that need one
  std::unique_ptr<detail::RoundTransport> rounds_;
  // Ranks on several nodes, the same number (>= 2) on each: the node and cross-node communicators
  // of the hierarchical all-reduce; otherwise null and the reason in hierarchyBlocker_.
  std::unique_ptr<detail::NodeHierarchy> hierarchy_;
  detail::HierarchyBlocker hierarchyBlocker_ = detail::HierarchyBlocker::kOneNode;
  std::unique_ptr<detail::DevicePath> device_;
  detail::Route lastRoute_ = detail::Route::kHostRing;
  const char* lastAlgorithm_ = "none";
};

}  // namespace ringsync
