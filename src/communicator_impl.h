// The Communicator core: the state behind a Communicator and the one pipeline every collective
// takes (call_pipeline.cc):
//
//   Communicator::reduceScatter (communicator.cc)   fills one Call (collectives/call.h)
//   Impl::run(call)   argument rules by kind (argument_checks.h); nothing sent on a rejection
//                     -> memory kind -> fingerprint (CallHeader) -> deadline
//     host buffers:   runOnHost -> chooseAlgorithm (algorithm_selection.h) -> the table's routine
//                     (collectives/algorithm_table.h), whose first round ends in the one check
//                     (call_check.h)
//     device buffers: agree on the call -> NCCL decided once (collective) -> chooseRoute
//                     -> NCCL (DevicePath::ncclRun), or the staged path (staged_path.h) around runOnHost
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
#include "collectives/algorithm_table.h"
#include "collectives/call.h"
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

  // Runs one collective call: every public collective is this with its Call filled in. A call with
  // `scattered` set (the GradientAverager's buckets, through core_access.h) skips the argument
  // rules and the pointer classification: the averager checked and agreed on its gradients at
  // construction. One span, or the split all-reduce, reduces that memory where it lies; any other
  // algorithm gets the spans packed into one buffer and unpacked after (lastScatteredInPlace()).
  void run(const detail::Call& call);
  bool lastScatteredInPlace() const { return lastScatteredInPlace_; }

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

  detail::MemoryKind memoryOf(const detail::Call& call);
  detail::CallHeader nextHeader(const detail::Call& call, detail::MemoryKind memory);
  detail::Deadline deadlineFor(const detail::CallHeader& header) const;
  detail::AlgorithmContext context(const detail::CallHeader& header, detail::Deadline& deadline);
  detail::Selection select(const detail::Call& call) const;

  // Host memory: choose the algorithm and run it (also what the staged path runs in between).
  void runOnHost(detail::CallHeader header, const detail::Call& call, detail::Deadline& deadline, detail::Route route);
  // A scattered all-reduce: in place where the algorithm allows, else packed (returns in place or not).
  bool runScattered(const detail::Selection& selection, detail::AlgorithmContext& ctx, const detail::Call& call);
  // Device memory: NCCL, or the staged path around runOnHost.
  void runOnDevice(const detail::CallHeader& header, const detail::Call& call, detail::Deadline& deadline);
  // The route, deciding NCCL first when it is undecided (after the ranks agreed).
  detail::Route deviceRoute(const detail::CallHeader& header, detail::Deadline& deadline, bool* agreed);
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
  detail::ScratchBuffer packScratch_;        // a scattered call's packed copy, for algorithms that need one
  detail::ScratchBuffer ringPartials_;       // the ring reduce-scatter's partial sums (ring_pipeline.cc)
  detail::ScratchBuffer pieceScratch_;       // the hierarchical reduce-scatter's and all-gather's pieces
  std::unique_ptr<detail::RoundTransport> rounds_;
  // Ranks on several nodes, the same number (>= 2) on each: the node and cross-node communicators
  // of the hierarchical all-reduce; otherwise null and the reason in hierarchyBlocker_.
  std::unique_ptr<detail::NodeHierarchy> hierarchy_;
  detail::HierarchyBlocker hierarchyBlocker_ = detail::HierarchyBlocker::kOneNode;
  std::unique_ptr<detail::DevicePath> device_;
  detail::Route lastRoute_ = detail::Route::kHostRing;
  const char* lastAlgorithm_ = "none";
  bool lastScatteredInPlace_ = false;
};

}  // namespace ringsync
