// The backend's plumbing (submit, lifetime) and the collectives that reduce or copy tensors in
// place: allreduce, broadcast, barrier. All-gather and reduce-scatter: gather_scatter.cc.
#include "ringsync_backend.h"

#include <exception>
#include <string>
#include <utility>

#include "ringsync/errors.h"
#include "ringsync_work.h"
#include "tensor_staging.h"
#include "torch_types.h"

namespace ringsync::torch_backend {

RingsyncBackend::RingsyncBackend(int rank, int size, std::unique_ptr<Communicator> comm)
    : ::c10d::Backend(rank, size), comm_(std::move(comm)) {}

RingsyncBackend::~RingsyncBackend() { shutdown(); }

void RingsyncBackend::shutdown() {
  progress_.close();  // queued jobs keep their own reference to the communicator until they ran
  std::lock_guard<std::mutex> lock(lifecycle_);
  comm_.reset();
}

std::shared_ptr<Communicator> RingsyncBackend::communicator() const {
  std::lock_guard<std::mutex> lock(lifecycle_);
  if (!comm_) throw AbortedError("ringsync backend: this process group was shut down");
  return comm_;
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::submit(::c10d::OpType type, const CallerStream& stream,
                                                         std::vector<at::Tensor> outputs, Collective collective,
                                                         bool asyncOp) {
  auto work = c10::make_intrusive<RingsyncWork>(getRank(), type, std::move(outputs), stream.devices());
  auto failure = std::make_shared<std::exception_ptr>();
  ProgressJob job;
  job.execute = [comm = communicator(), collective = std::move(collective), stream, failure]() noexcept {
    try {
      const CallerStream::Current current(stream);
      collective(*comm);
    } catch (...) {
      *failure = std::current_exception();
    }
  };
  job.complete = [work, stream, failure]() noexcept {
    // DDP's callbacks run inside; on CUDA the future records its events on the caller's stream.
    const CallerStream::Current current(stream);
    if (*failure) {
      work->fail(*failure);
    } else {
      work->succeed();
    }
  };
  progress_.submit(std::move(job), !asyncOp);
  return work;
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::AllreduceOptions& opts) {
  return allreduceTensors(tensors, opts.reduceOp, "allreduce", ::c10d::OpType::ALLREDUCE, opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const ::c10d::AllreduceCoalescedOptions& opts) {
  return allreduceTensors(tensors, opts.reduceOp, "allreduce_coalesced", ::c10d::OpType::ALLREDUCE_COALESCED,
                          opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduceTensors(std::vector<at::Tensor>& tensors,
                                                                   const ::c10d::ReduceOp& torchOp, const char* call,
                                                                   ::c10d::OpType type, bool asyncOp) {
  const ReduceOp op = ringsyncOp(torchOp, call);
  for (const at::Tensor& t : tensors) checkDtype(t, call, op);
  const CallerStream stream(tensors, call);
  std::vector<StagedTensor> staged;
  staged.reserve(tensors.size());
  for (const at::Tensor& t : tensors) staged.emplace_back(t, /*copyIn=*/true);
  CUstream_st* cudaStream = stream.cudaStream();
  auto collective = [staged = std::move(staged), op, cudaStream](Communicator& comm) {
    for (const StagedTensor& s : staged) {
      const ReduceOp onWire = wireOp(s.dense().scalar_type(), op);
      if (cudaStream) {
        comm.allreduce(s.data(), s.data(), s.count(), s.wireType(), onWire, cudaStream);
      } else {
        comm.allreduce(s.data(), s.data(), s.count(), s.wireType(), onWire);
      }
      s.finish();
    }
  };
  return submit(type, stream, tensors, std::move(collective), asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::BroadcastOptions& opts) {
  const int root = static_cast<int>(opts.rootRank);
  if (opts.rootRank < 0 || opts.rootRank >= getSize())
    throw InvalidArgument("ringsync backend: broadcast root=" + std::to_string(opts.rootRank) +
                          " is not a rank of this group (size " + std::to_string(getSize()) + ")");
  for (const at::Tensor& t : tensors) checkDtype(t, "broadcast");
  const CallerStream stream(tensors, "broadcast");
  std::vector<StagedTensor> staged;
  staged.reserve(tensors.size());
  for (const at::Tensor& t : tensors) staged.emplace_back(t, /*copyIn=*/getRank() == root);
  CUstream_st* cudaStream = stream.cudaStream();
  auto collective = [staged = std::move(staged), root, cudaStream](Communicator& comm) {
    for (const StagedTensor& s : staged) {
      if (cudaStream) {
        comm.broadcast(s.data(), s.count(), s.wireType(), root, cudaStream);
      } else {
        comm.broadcast(s.data(), s.count(), s.wireType(), root);
      }
      s.finish();
    }
  };
  return submit(::c10d::OpType::BROADCAST, stream, tensors, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::barrier(const ::c10d::BarrierOptions& opts) {
  const CallerStream host({}, "barrier");
  return submit(::c10d::OpType::BARRIER, host, {}, [](Communicator& comm) { comm.barrier(); }, opts.asyncOp);
}

}  // namespace ringsync::torch_backend
