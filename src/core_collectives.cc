// The Communicator core's collectives: fingerprint, deadline, algorithm or route, run, placement.
// (The shape of the path is described in communicator_impl.h.)
#include "collectives/reduce_kernels.h"
#include "communicator_impl.h"
#include "ringsync/errors.h"
#include "staged_path.h"

namespace ringsync {

using detail::CallHeader;
using detail::CollectiveKind;
using detail::MemoryKind;
using detail::Route;

template <typename Body> void Communicator::Impl::guarded(Body&& body) {
  try {
    body();
  } catch (const MismatchError&) {
    tracer_.failed();
    throw;  // detected from the fingerprints before any data moved: peers are still in step
  } catch (const NonFiniteError&) {
    tracer_.failed();
    throw;  // likewise
  } catch (const std::exception& error) {
    tracer_.failed();
    abort(error.what());  // timeout or transport failure: messages may still be in flight
    throw;
  }
}

void Communicator::Impl::runHostAllreduce(CallHeader header, const detail::AllreduceArgs& args,
                                          detail::Deadline& deadline) {
  if (options_.checkFinite && detail::containsNonFinite(args.send, args.count, args.type))
    header.flags |= detail::kFlagNonFiniteInput;
  const detail::Selection selection = select(CollectiveKind::kAllreduce, args.count, dataTypeSize(args.type));
  detail::AlgorithmContext ctx = context(header, deadline);
  detail::runAllreduce(selection.algorithm, ctx, args);
  notePlacement(header, static_cast<MemoryKind>(header.memory) == MemoryKind::kHost ? Route::kHostRing : Route::kStaged,
                detail::algorithmName(selection.algorithm), selection.reason);
}

void Communicator::Impl::runHostBroadcast(const CallHeader& header, const detail::BroadcastArgs& args,
                                          detail::Deadline& deadline) {
  const detail::Selection selection = select(CollectiveKind::kBroadcast, args.bytes, 1);
  detail::AlgorithmContext ctx = context(header, deadline);
  detail::runBroadcast(selection.algorithm, ctx, args);
  notePlacement(header, static_cast<MemoryKind>(header.memory) == MemoryKind::kHost ? Route::kHostRing : Route::kStaged,
                detail::algorithmName(selection.algorithm), selection.reason);
}

void Communicator::Impl::agree(const CallHeader& header, detail::Deadline& deadline) {
  detail::AlgorithmContext ctx = context(header, deadline);
  detail::fingerprintRound(ctx);
}

// Every rank agreed this call is on device memory before NCCL is decided: a rank that passed host
// memory raises MismatchError with the others instead of leaving them in the bootstrap.
Route Communicator::Impl::deviceRoute(const char* call, const CallHeader& header, detail::Deadline& deadline,
                                      bool* agreed) {
  if (!device_->ncclDecided()) {
    agree(header, deadline);
    *agreed = true;
    device_->decideNccl(deadline);
  }
  detail::RouteInputs in{call, MemoryKind::kDevice, MemoryKind::kDevice, options_.backend, false, {}};
  in.ncclUsable = device_->ncclUsable(&in.ncclUnusableWhy);
  return detail::chooseRoute(in);
}

void Communicator::Impl::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                   CUstream_st* stream) {
  const MemoryKind memory = memoryOf("allreduce", send, recv);
  const CallHeader header =
      nextHeader(CollectiveKind::kAllreduce, count, static_cast<int>(type), static_cast<int>(op), -1, memory);
  detail::Deadline deadline = deadlineFor(header);
  guarded([&] {
    if (memory == MemoryKind::kHost) return runHostAllreduce(header, {send, recv, count, type, op}, deadline);
    bool agreed = false;
    if (deviceRoute("allreduce", header, deadline, &agreed) == Route::kNccl) {
      if (!agreed && size_ > 1) agree(header, deadline);
      tracer_.deviceMark(stream);
      device_->ncclAllreduce(send, recv, count, type, op, stream, deadline);
      tracer_.deviceMark(stream);
      notePlacement(header, Route::kNccl, "nccl", "NCCL serves device buffers (one GPU per rank)");
      return;
    }
    detail::stagedAllreduce(device_->staging(), send, recv, count * dataTypeSize(type), stream, [&](void* host) {
      runHostAllreduce(header, {host, host, count, type, op}, deadline);
    });
  });
}

bool Communicator::Impl::allreduceScattered(const detail::ScatteredBuffer& buffer, DataType type, ReduceOp op) {
  ensureUsable();
  const std::size_t count = buffer.count();
  const CallHeader header =
      nextHeader(CollectiveKind::kAllreduce, count, static_cast<int>(type), static_cast<int>(op), -1, MemoryKind::kHost);
  detail::Deadline deadline = deadlineFor(header);
  bool inPlace = false;
  guarded([&] {
    CallHeader checked = header;
    if (options_.checkFinite)
      buffer.forEach(0, count, [&](const std::byte* data, std::size_t, std::size_t length) {
        if (detail::containsNonFinite(data, length, type)) checked.flags |= detail::kFlagNonFiniteInput;
      });
    const detail::Selection selection = select(CollectiveKind::kAllreduce, count, dataTypeSize(type));
    detail::AlgorithmContext ctx = context(checked, deadline);
    const std::vector<detail::Span>& spans = buffer.spans();
    inPlace = spans.size() == 1 || selection.algorithm == detail::AlgorithmId::kSplitAllreduce;
    if (spans.size() == 1) {
      detail::runAllreduce(selection.algorithm, ctx, {spans[0].data, spans[0].data, count, type, op});
    } else if (inPlace) {
      detail::AllreduceArgs args{nullptr, nullptr, count, type, op};
      args.scattered = &buffer;
      detail::runAllreduce(selection.algorithm, ctx, args);
    } else {
      packScratch_.reserve(count * dataTypeSize(type));
      void* packed = packScratch_.data();
      buffer.gather(packed);
      detail::runAllreduce(selection.algorithm, ctx, {packed, packed, count, type, op});
      buffer.scatter(packed);
    }
    notePlacement(checked, Route::kHostRing, detail::algorithmName(selection.algorithm), selection.reason);
  });
  return inPlace;
}

void Communicator::Impl::broadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) {
  const MemoryKind memory = memoryOf("broadcast", buf, buf);
  const CallHeader header = nextHeader(CollectiveKind::kBroadcast, count, static_cast<int>(type), -1, root, memory);
  detail::Deadline deadline = deadlineFor(header);
  const std::size_t bytes = count * dataTypeSize(type);
  guarded([&] {
    if (memory == MemoryKind::kHost) return runHostBroadcast(header, {buf, bytes, root}, deadline);
    bool agreed = false;
    if (deviceRoute("broadcast", header, deadline, &agreed) == Route::kNccl) {
      if (!agreed && size_ > 1) agree(header, deadline);
      tracer_.deviceMark(stream);
      device_->ncclBroadcast(buf, count, type, root, stream, deadline);
      tracer_.deviceMark(stream);
      notePlacement(header, Route::kNccl, "nccl", "NCCL serves device buffers (one GPU per rank)");
      return;
    }
    detail::stagedBroadcast(device_->staging(), buf, bytes, rank_ == root, stream,
                            [&](void* host) { runHostBroadcast(header, {host, bytes, root}, deadline); });
  });
}

void Communicator::Impl::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  // Host buffers only: a device pointer is rejected here, before anything is sent or bootstrapped.
  if (memoryOf("allgather", send, recv) != MemoryKind::kHost)
    throw InvalidArgument("allgather: device buffers are not supported; use host buffers");
  const CallHeader header =
      nextHeader(CollectiveKind::kAllgather, count, static_cast<int>(type), -1, -1, MemoryKind::kHost);
  detail::Deadline deadline = deadlineFor(header);
  const std::size_t bytes = count * dataTypeSize(type);
  const detail::Selection selection = select(CollectiveKind::kAllgather, count, dataTypeSize(type));
  guarded([&] {
    detail::AlgorithmContext ctx = context(header, deadline);
    detail::runAllgather(selection.algorithm, ctx, {send, recv, bytes});
  });
  notePlacement(header, Route::kHostRing, detail::algorithmName(selection.algorithm), selection.reason);
}

void Communicator::Impl::barrier() {
  const CallHeader header = nextHeader(CollectiveKind::kBarrier, 0, -1, -1, -1, MemoryKind::kHost);
  detail::Deadline deadline = deadlineFor(header);
  const detail::Selection selection = select(CollectiveKind::kBarrier, 0, 1);
  guarded([&] {
    detail::AlgorithmContext ctx = context(header, deadline);
    detail::runBarrier(selection.algorithm, ctx);
  });
  notePlacement(header, Route::kHostRing, detail::algorithmName(selection.algorithm), selection.reason);
}

}  // namespace ringsync
