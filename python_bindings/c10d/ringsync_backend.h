// ProcessGroupRingsync: torch.distributed's collectives carried by one ringsync::Communicator, as
// a C++ c10d::Backend (what torch's own Gloo and NCCL backends are).
//
// Each collective checks its arguments on the caller's thread (a bad call raises there, before
// anything is sent), then queues one job on the backend's ProgressThread and returns a
// RingsyncWork that completes there. A synchronous call (asyncOp=false) that finds nothing
// queued runs on the caller's thread instead. No Python and no GIL anywhere on this path.
// Collectives ringsync does not have raise NotImplementedError naming them.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "caller_stream.h"
#include "progress_thread.h"
#include "ringsync/communicator.h"

namespace ringsync::torch_backend {

class RingsyncBackend final : public ::c10d::Backend {
 public:
  // comm: over the group's MPI ranks, in the group's rank order (torch's rank r is its rank r).
  RingsyncBackend(int rank, int size, std::unique_ptr<Communicator> comm);
  ~RingsyncBackend() override;  // shutdown()

  const std::string getBackendName() const override { return "ringsync"; }

  // Lets queued collectives finish, stops the progress thread and frees the communicator (before
  // MPI is finalised: ringsync.torch calls it at exit). Later calls raise AbortedError.
  void shutdown() override;

  c10::intrusive_ptr<::c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                             const ::c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                       const ::c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                             const ::c10d::BroadcastOptions& opts) override;
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
  c10::intrusive_ptr<::c10d::Work> barrier(const ::c10d::BarrierOptions& opts) override;

  // Not in ringsync: each raises NotImplementedError naming itself (unsupported_collectives.cc).
  c10::intrusive_ptr<::c10d::Work> reduce(std::vector<at::Tensor>& tensors, const ::c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                          std::vector<at::Tensor>& inputs, const ::c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                           std::vector<std::vector<at::Tensor>>& inputs,
                                           const ::c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                            const ::c10d::AllToAllOptions& opts) override;
#if RINGSYNC_C10D_SINGLE_NAMES
  c10::intrusive_ptr<::c10d::Work> all_to_all_single(at::Tensor& output, at::Tensor& input,
                                                     std::vector<int64_t>& outputSplits,
                                                     std::vector<int64_t>& inputSplits,
                                                     const ::c10d::AllToAllOptions& opts) override;
#endif
  c10::intrusive_ptr<::c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                                 std::vector<int64_t>& outputSplits, std::vector<int64_t>& inputSplits,
                                                 const ::c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<::c10d::Work> send(std::vector<at::Tensor>& tensors, int dstRank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recv(std::vector<at::Tensor>& tensors, int srcRank, int tag) override;
  c10::intrusive_ptr<::c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

 private:
  using Collective = std::function<void(Communicator&)>;

  // Queues `collective` (or runs it here, see ProgressThread::submit); the Work completes with
  // `outputs`, on `stream` for CUDA tensors.
  c10::intrusive_ptr<::c10d::Work> submit(::c10d::OpType type, const CallerStream& stream,
                                          std::vector<at::Tensor> outputs, Collective collective, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> allreduceTensors(std::vector<at::Tensor>& tensors, const ::c10d::ReduceOp& op,
                                                    const char* call, ::c10d::OpType type, bool asyncOp);
  c10::intrusive_ptr<::c10d::Work> gatherSingle(at::Tensor& output, at::Tensor& input,
                                                const ::c10d::AllgatherOptions& opts);
  c10::intrusive_ptr<::c10d::Work> reduceScatterSingle(at::Tensor& output, at::Tensor& input,
                                                       const ::c10d::ReduceScatterOptions& opts);
  // out = this rank's slice of the all-reduce of `block` (a private, contiguous copy of the inputs).
  c10::intrusive_ptr<::c10d::Work> reduceScatterBlock(at::Tensor block, at::Tensor out, ReduceOp op,
                                                      const CallerStream& stream, bool asyncOp);
  std::shared_ptr<Communicator> communicator() const;  // AbortedError after shutdown()

  mutable std::mutex lifecycle_;  // guards comm_ (shutdown() against a collective being issued)
  std::shared_ptr<Communicator> comm_;  // shared with queued jobs
  ProgressThread progress_;
};

}  // namespace ringsync::torch_backend
