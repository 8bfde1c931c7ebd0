// ProcessGroupRingsync: torch.distributed's collectives carried by one ringsync::Communicator, as
// a C++ c10d::Backend (what torch's own Gloo and NCCL backends are).
//
// Each collective checks its arguments on the caller's thread (a bad call raises there, before
// anything is sent), then queues one job on the backend's ProgressThread and returns a
// RingsyncWork that completes there. A synchronous call (asyncOp=false) that finds nothing
// queued runs on the caller's thread instead. No Python and no GIL anywhere on this path.
//  - ringsync's own algorithms: allreduce (+ coalesced), broadcast, allgather (list, single
//    tensor, coalesced), reduce_scatter (ringsync's reduce-scatter, see gather_scatter.cc),
//    reduce (the all-reduce, kept at the root), barrier;
//  - MPI's own non-blocking collectives, polled under ringsync's deadline after a fingerprint
//    round (mpi_collectives.cc): gather, scatter, alltoall (list and single tensor);
//  - MPI's point-to-point, posted at the call (point_to_point.h): send, recv, recv_anysource,
//    and monitored_barrier (Gloo's protocol).
// Errors are ringsync's (MismatchError, TimeoutError, ...). After a TimeoutError the group is
// aborted: later calls raise AbortedError, and the failed call's tensors are kept alive for good
// (abandoned_memory.h says why).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "caller_stream.h"
#include "mpi_collectives.h"
#include "point_to_point.h"
#include "progress_thread.h"
#include "ringsync/communicator.h"

namespace ringsync::torch_backend {

// Whether the group was aborted (a TimeoutError, abort()), shared with its queued jobs.
class GroupState {
 public:
  void abort(const std::string& reason);
  bool aborted() const { return aborted_.load(); }
  void throwIfAborted(const char* call) const;  // AbortedError naming the reason

 private:
  std::atomic<bool> aborted_{false};
  mutable std::mutex mutex_;
  std::string reason_;
};

class RingsyncBackend final : public ::c10d::Backend {
 public:
  // comm: over the group's MPI ranks, in the group's rank order (torch's rank r is its rank r).
  // Collective over the group (it duplicates comm's MPI communicator for MPI's own calls).
  RingsyncBackend(int rank, int size, std::unique_ptr<Communicator> comm);
  ~RingsyncBackend() override;  // shutdown()

  // torch reports a registered backend as "custom" in some places (ProcessGroup.name()); this is
  // what the backend itself says.
  const std::string getBackendName() const override { return "ringsync"; }
  c10::intrusive_ptr<Options> getBackendOptions() override;

  // Lets queued collectives finish, stops the threads and frees the communicator (before MPI is
  // finalised: ringsync.torch calls it at exit). Later calls raise AbortedError.
  void shutdown() override;
  // Without waiting: queued collectives fail with AbortedError, pending receives are cancelled,
  // later calls raise AbortedError. A collective already running ends at its own deadline.
  void abort() override;

  // Sequence numbers: the collectives issued on this group so far (the same on every rank while
  // they agree; TORCH_DISTRIBUTED_DEBUG=DETAIL compares them).
  uint64_t getSequenceNumberForGroup() override { return sequence_.load(); }
  void setSequenceNumberForGroup() override {}  // they start at 0 on every rank

  // torch.distributed.split_group: a new group over `ranks` (this group's ranks), made by its
  // members only (MPI_Comm_create_group); others get null.
  bool supportsSplitting() const override { return true; }
  c10::intrusive_ptr<::c10d::Backend> split(const c10::intrusive_ptr<::c10d::Store>& store,
                                            const std::vector<int>& ranks,
                                            const c10::intrusive_ptr<Options>& opts) override;

  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                       const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                    const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce(std::vector<at::Tensor>& tensors, const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& opts) override;
  // monitored_barrier.cc: Gloo's protocol and messages, on the caller's thread.
  void monitoredBarrier(const ::c10d::BarrierOptions& opts, bool waitAllRanks) override;

  // gather_scatter.cc
  c10::intrusive_ptr<::c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                             std::vector<at::Tensor>& inputs,
                                             const ::c10d::AllgatherOptions& opts) override;
#if RINGSYNC_C10D_SINGLE_NAMES  // newer torch's names for the *_base calls (see CMakeLists.txt)
  c10::intrusive_ptr<::c10d::Work> all_gather_single(at::Tensor& output, at::Tensor& input,
                                                     const ::c10d::AllgatherOptions& opts) override;
#endif
  c10::intrusive_ptr<::c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                  const ::c10d::ReduceScatterOptions& opts) override;
#if RINGSYNC_C10D_SINGLE_NAMES
  c10::intrusive_ptr<::c10d::Work> reduce_scatter_single(at::Tensor& output, at::Tensor& input,
                                                         const ::c10d::ReduceScatterOptions& opts) override;
#endif
  c10::intrusive_ptr<::c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                        const ::c10d::ReduceScatterOptions& opts) override;

  // coalesced.cc (torch's newer names, all_gather_single_coalesced and
  // reduce_scatter_single_coalesced, forward to these)
  c10::intrusive_ptr<::c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                       std::vector<at::Tensor>& inputs,
                                                       const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const ::c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> reduce_scatter_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                   std::vector<at::Tensor>& inputs,
                                                                   const ::c10d::ReduceScatterOptions& opts) override;

  // mpi_collectives.cc
  c10::intrusive_ptr<::c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs, const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                            const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                                 const ::c10d::AllToAllOptions& opts) override;

  // point_to_point_calls.cc
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  using Collective = std::function<void(Communicator&)>;

  // Queues `collective` (or runs it here, see ProgressThread::submit); the Work settles with
  // `outputs`, on `stream` for CUDA tensors. The collective runs with the caller's autograd and
  // inference modes (caller_modes.h).
  c10::intrusive_ptr<::c10d::Work> submit(::c10d::OpType type, const CallerStream& stream,
                                          std::vector<at::Tensor> outputs, Collective collective, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> allreduceTensors(std::vector<at::Tensor>& tensors, const ::c10d::ReduceOp& op,
                                                    const char* call, ::c10d::OpType type, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> allreduceList(std::vector<at::Tensor>& tensors, ReduceOp op, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> gatherSingle(at::Tensor& output, at::Tensor& input,
                                                const ::c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<::c10d::Work> reduceScatterSingle(at::Tensor& output, at::Tensor& input,
                                                       const ::c10d::ReduceScatterOptions& opts);
  // out = this rank's slice of the all-reduce of `block` (a private, contiguous copy of the inputs).
  c10::intrusive_ptr<::c10d::Work> reduceScatterBlock(at::Tensor block, at::Tensor out, ReduceOp op,
                                                      const CallerStream& stream, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> pointToPoint(at::Tensor tensor, bool receive, int peer, int tag, const char* call);
  std::shared_ptr<Communicator> communicator() const;  // AbortedError after shutdown()
  // InvalidArgument unless `rank` is a rank of this group (`name`: "root", "dst", ...).
  void checkRank(int64_t rank, const char* call, const char* name = "root") const;

  mutable std::mutex lifecycle_;        // guards comm_ (shutdown() against a collective being issued)
  std::shared_ptr<Communicator> comm_;  // shared with queued jobs
  std::shared_ptr<GroupState> state_ = std::make_shared<GroupState>();
  std::shared_ptr<MpiSide> mpi_;  // MPI's own collectives, on the progress thread
  std::atomic<std::uint64_t> sequence_{0};
  std::atomic<std::uint64_t> monitoredBarriers_{0};
  std::chrono::milliseconds timeout_;
  ProgressThread progress_;
  std::unique_ptr<PointToPoint> messages_;
};

}  // namespace ringsync::torch_backend
