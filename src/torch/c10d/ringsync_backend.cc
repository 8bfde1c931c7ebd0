// The backend's plumbing (submit, lifetime, abort) and the collectives that reduce or copy tensors
// in place: allreduce, broadcast, reduce, barrier. All-gather and reduce-scatter: gather_scatter.cc.
#include "ringsync_backend.h"

#include <ATen/ATen.h>

#include <exception>
#include <string>
#include <utility>

#include "abandoned_memory.h"
#include "blocking_wait.h"
#include "caller_modes.h"
#include "ringsync/errors.h"
#include "ringsync_work.h"
#include "tensor_staging.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

std::chrono::milliseconds asTimeout(double seconds) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000.0));
}

bool isTimeout(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError&) {
    return true;
  } catch (...) {
    return false;
  }
}

std::string messageOf(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

void GroupState::abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return;
  reason_ = reason;
  aborted_ = true;
}

void GroupState::throwIfAborted(const char* call) const {
  if (!aborted_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  throw AbortedError(std::string("ringsync backend: ") + call + ": this process group was aborted (" + reason_ +
                     "); create a new group");
}

RingsyncBackend::RingsyncBackend(int rank, int size, std::unique_ptr<Communicator> comm)
    : ::c10d::Backend(rank, size),
      comm_(std::move(comm)),
      mpi_(std::make_shared<MpiSide>(comm_->mpiComm(), comm_->options())),
      timeout_(asTimeout(comm_->options().timeoutSeconds)),
      progress_(),
      messages_(std::make_unique<PointToPoint>(mpi_->comm(), comm_->options())) {}

RingsyncBackend::~RingsyncBackend() { shutdown(); }

c10::intrusive_ptr<::c10d::Backend::Options> RingsyncBackend::getBackendOptions() {
  return c10::make_intrusive<Options>("ringsync", timeout_);
}

void RingsyncBackend::shutdown() {
  // A queued job's completion may run a Python callback: the hook lets go of the GIL meanwhile.
  blockingWait([this] {
    messages_->close();
    progress_.close();  // queued jobs keep their own reference to the communicator until they ran
  });
  std::lock_guard<std::mutex> lock(lifecycle_);
  comm_.reset();
}

void RingsyncBackend::abort() {
  state_->abort("abort() was called");
  messages_->abort("abort() was called");
}

std::shared_ptr<Communicator> RingsyncBackend::communicator() const {
  state_->throwIfAborted("a collective");
  std::lock_guard<std::mutex> lock(lifecycle_);
  if (!comm_) throw AbortedError("ringsync backend: this process group was shut down");
  return comm_;
}

void RingsyncBackend::checkRank(int64_t rank, const char* call, const char* name) const {
  if (rank < 0 || rank >= getSize())
    throw InvalidArgument(std::string("ringsync backend: ") + call + " " + name + "=" + std::to_string(rank) +
                          " is not a rank of this group (size " + std::to_string(getSize()) + ")");
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::submit(::c10d::OpType type, const CallerStream& stream,
                                                         std::vector<at::Tensor> outputs, Collective collective,
                                                         bool asyncOp) {
  auto work = c10::make_intrusive<RingsyncWork>(getRank(), type, std::move(outputs), stream.devices());
  auto call = std::make_shared<Collective>(std::move(collective));  // holds the call's tensors
  ProgressJob job;
  job.execute = [comm = communicator(), call, stream, modes = CallerModes(), work, state = state_]() noexcept {
    std::exception_ptr error;
    std::shared_ptr<c10::Event> done;
    try {
      state->throwIfAborted(::c10d::opTypeToString(work->retrieveOpType()).c_str());
      const CallerStream::Current current(stream);
      const CallerModes::Applied applied(modes);
      (*call)(*comm);
      done = stream.recordDone();
    } catch (...) {
      error = std::current_exception();
    }
    if (error && (isTimeout(error) || comm->aborted())) {
      keepUntilExit(call);  // MPI may still write the call's tensors (abandoned_memory.h)
      state->abort(messageOf(error));
    }
    work->settle(std::move(done), error);
  };
  job.complete = [work, stream]() noexcept {
    // DDP's callbacks run inside; on CUDA the future records its events on the caller's stream.
    const CallerStream::Current current(stream);
    work->completeFuture();
  };
  ++sequence_;
  progress_.submit(std::move(job), !asyncOp);
  return work;
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduce(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::AllreduceOptions& opts) {
  if (tensors.size() > 1) return allreduceList(tensors, ringsyncOp(opts.reduceOp, "allreduce"), opts.asyncOp);
  return allreduceTensors(tensors, opts.reduceOp, "allreduce", ::c10d::OpType::ALLREDUCE, opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                                      const ::c10d::AllreduceCoalescedOptions& opts) {
  return allreduceTensors(tensors, opts.reduceOp, "allreduce_coalesced", ::c10d::OpType::ALLREDUCE_COALESCED,
                          opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduce_sparse(std::vector<at::Tensor>& tensors,
                                                                   const ::c10d::AllreduceOptions&) {
  const CallerStream refused(tensors, "allreduce_sparse");  // names the sparse layout
  throw InvalidArgument("ringsync backend: allreduce_sparse: ringsync carries dense tensors; use a 'gloo' group");
}

// Each tensor all-reduced on its own (allreduce_coalesced, and allreduce of one tensor).
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduceTensors(std::vector<at::Tensor>& tensors,
                                                                   const ::c10d::ReduceOp& torchOp, const char* call,
                                                                   ::c10d::OpType type, bool asyncOp) {
  const ReduceOp op = ringsyncOp(torchOp, call);
  const CallerStream stream(tensors, call);
  for (const at::Tensor& t : tensors) checkDtype(t, call, op);
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

// allreduce([t1, ..., tk]) as Gloo's: the op over the k tensors of every rank, written to all k.
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::allreduceList(std::vector<at::Tensor>& tensors, ReduceOp op,
                                                                bool asyncOp) {
  const CallerStream stream(tensors, "allreduce");
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    checkDtype(tensors[i], "allreduce", op);
    if (tensors[i].scalar_type() != tensors[0].scalar_type() || !tensors[i].sizes().equals(tensors[0].sizes()))
      throw InvalidArgument(
          "ringsync backend: allreduce of a list reduces across it as well: every tensor must be "
          "like the first (" +
          dtypeName(tensors[0].scalar_type()) + " x " + std::to_string(tensors[0].numel()) + "), tensor " +
          std::to_string(i) + " is " + dtypeName(tensors[i].scalar_type()) + " x " +
          std::to_string(tensors[i].numel()) + " (allreduce_coalesced reduces each on its own)");
  }
  // The local reduction, on the caller's thread and stream (kAvg: a sum now, one division later).
  const bool average = op == ReduceOp::kAvg;
  at::Tensor local = reduceLocally(tensors, average ? ReduceOp::kSum : op);
  CUstream_st* cudaStream = stream.cudaStream();
  const int64_t listSize = static_cast<int64_t>(tensors.size());
  auto collective = [whole = StagedTensor(local, true), targets = tensors, op, average, listSize,
                     cudaStream](Communicator& comm) {
    const ReduceOp onWire = wireOp(whole.dense().scalar_type(), op);
    if (cudaStream) {
      comm.allreduce(whole.data(), whole.data(), whole.count(), whole.wireType(), onWire, cudaStream);
    } else {
      comm.allreduce(whole.data(), whole.data(), whole.count(), whole.wireType(), onWire);
    }
    if (average) divideInPlace(whole.dense(), listSize);  // the wire's average is over the ranks already
    for (const at::Tensor& t : targets) t.copy_(whole.dense().view(t.sizes()));
  };
  return submit(::c10d::OpType::ALLREDUCE, stream, tensors, std::move(collective), asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::broadcast(std::vector<at::Tensor>& tensors,
                                                            const ::c10d::BroadcastOptions& opts) {
  checkRank(opts.rootRank, "broadcast");
  const int root = static_cast<int>(opts.rootRank);
  const CallerStream stream(tensors, "broadcast");
  for (const at::Tensor& t : tensors) checkDtype(t, "broadcast");
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

// reduce: ringsync's all-reduce (every rank computes the result; the root keeps it, the others
// work on a private copy and leave their tensor as it was), after a fingerprint round that the
// all-reduce's own check cannot make: that every rank names the same root.
c10::intrusive_ptr<::c10d::Work> RingsyncBackend::reduce(std::vector<at::Tensor>& tensors,
                                                         const ::c10d::ReduceOptions& opts) {
  checkRank(opts.rootRank, "reduce");
  const ReduceOp op = ringsyncOp(opts.reduceOp, "reduce");
  if (tensors.size() != 1)
    throw InvalidArgument("ringsync backend: reduce takes one tensor, got a list of " + std::to_string(tensors.size()));
  const CallerStream stream(tensors, "reduce");
  checkDtype(tensors[0], "reduce", op);
  const int root = static_cast<int>(opts.rootRank);
  const bool isRoot = getRank() == root;
  const at::Tensor target = tensors[0];
  auto collective = [staged = isRoot ? StagedTensor(target, true)
                                     : StagedTensor(target.clone(at::MemoryFormat::Contiguous), true),
                     op, root, isRoot, mpi = mpi_, cudaStream = stream.cudaStream()](Communicator& comm) {
    agreeThroughMpi(*mpi,
                    mpi->fingerprint(::c10d::OpType::REDUCE, staged.dense(), staged.dense().numel(), root,
                                     static_cast<int>(op)),
                    "reduce");
    const ReduceOp onWire = wireOp(staged.dense().scalar_type(), op);
    if (cudaStream) {
      comm.allreduce(staged.data(), staged.data(), staged.count(), staged.wireType(), onWire, cudaStream);
    } else {
      comm.allreduce(staged.data(), staged.data(), staged.count(), staged.wireType(), onWire);
    }
    if (isRoot) staged.finish();
  };
  return submit(::c10d::OpType::REDUCE, stream, tensors, std::move(collective), opts.asyncOp);
}

c10::intrusive_ptr<::c10d::Work> RingsyncBackend::barrier(const ::c10d::BarrierOptions& opts) {
  const CallerStream host({}, "barrier");
  return submit(
      ::c10d::OpType::BARRIER, host, {}, [](Communicator& comm) { comm.barrier(); }, opts.asyncOp);
}

}  // namespace ringsync::torch_backend
