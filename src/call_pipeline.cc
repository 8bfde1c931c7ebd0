// The one pipeline every collective call runs (the shape is in communicator_impl.h): argument
// rules, memory kind, fingerprint header, deadline, then the host algorithm, NCCL, or the staged
// path around the host algorithm, and the placement it ends with.
#include "argument_checks.h"
#include "collectives/reduce_kernels.h"
#include "communicator_impl.h"
#include "ringsync/errors.h"
#include "staged_path.h"

namespace ringsync {

using detail::Call;
using detail::CallHeader;
using detail::CollectiveKind;
using detail::MemoryKind;
using detail::Route;

namespace {

// Whether the input a reducing call reads holds NaN or Inf (RINGSYNC_CHECK_FINITE).
bool inputNonFinite(const Call& call, int ranks) {
  if (call.scattered == nullptr) return detail::containsNonFinite(call.send, call.sendCount(ranks), call.type);
  bool found = false;
  call.scattered->forEach(0, call.count, [&](const std::byte* data, std::size_t, std::size_t length) {
    found = found || detail::containsNonFinite(data, length, call.type);
  });
  return found;
}

}  // namespace

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

void Communicator::Impl::run(const Call& call) {
  ensureUsable();
  if (call.scattered == nullptr) detail::checkArguments(call, rank_, size_);
  const MemoryKind memory = call.scattered == nullptr ? memoryOf(call) : MemoryKind::kHost;
  const CallHeader header = nextHeader(call, memory);
  detail::Deadline deadline = deadlineFor(header);
  guarded([&] {
    if (memory == MemoryKind::kHost) return runOnHost(header, call, deadline, Route::kHostRing);
    runOnDevice(header, call, deadline);
  });
}

void Communicator::Impl::runOnHost(CallHeader header, const Call& call, detail::Deadline& deadline, Route route) {
  if (options_.checkFinite && call.reduces() && inputNonFinite(call, size_))
    header.flags |= detail::kFlagNonFiniteInput;
  const detail::Selection selection = select(call);
  detail::AlgorithmContext ctx = context(header, deadline);
  if (call.scattered != nullptr) {
    lastScatteredInPlace_ = runScattered(selection, ctx, call);
  } else {
    detail::runAlgorithm(selection.algorithm, ctx, call);
  }
  notePlacement(header, route, detail::algorithmName(selection.algorithm), selection.reason);
}

bool Communicator::Impl::runScattered(const detail::Selection& selection, detail::AlgorithmContext& ctx,
                                      const Call& call) {
  const std::vector<detail::Span>& spans = call.scattered->spans();
  Call contiguous = call;
  contiguous.scattered = nullptr;
  if (spans.size() == 1) {
    contiguous.send = contiguous.recv = spans[0].data;
    detail::runAlgorithm(selection.algorithm, ctx, contiguous);
    return true;
  }
  if (detail::algorithmEntry(selection.algorithm).takesScattered) {
    detail::runAlgorithm(selection.algorithm, ctx, call);
    return true;
  }
  packScratch_.reserve(call.count * call.elementBytes());
  void* packed = packScratch_.data();
  call.scattered->gather(packed);
  contiguous.send = contiguous.recv = packed;
  detail::runAlgorithm(selection.algorithm, ctx, contiguous);
  call.scattered->scatter(packed);
  return false;
}

void Communicator::Impl::runOnDevice(const CallHeader& header, const Call& call, detail::Deadline& deadline) {
  bool agreed = false;
  if (deviceRoute(header, deadline, &agreed) == Route::kNccl) {
    if (!agreed && size_ > 1) agree(header, deadline);
    tracer_.deviceMark(call.stream);
    device_->ncclRun(call, deadline);
    tracer_.deviceMark(call.stream);
    notePlacement(header, Route::kNccl, "nccl", "NCCL serves device buffers (one GPU per rank)");
    return;
  }
  detail::stagedRun(device_->staging(), call, rank_, size_,
                    [&](const Call& onHost) { runOnHost(header, onHost, deadline, Route::kStaged); });
}

void Communicator::Impl::agree(const CallHeader& header, detail::Deadline& deadline) {
  detail::AlgorithmContext ctx = context(header, deadline);
  detail::fingerprintRound(ctx);
}

// Every rank agreed this call is on device memory before NCCL is decided: a rank that passed host
// memory raises MismatchError with the others instead of leaving them in the bootstrap.
Route Communicator::Impl::deviceRoute(const CallHeader& header, detail::Deadline& deadline, bool* agreed) {
  if (!device_->ncclDecided()) {
    agree(header, deadline);
    *agreed = true;
    device_->decideNccl(deadline);
  }
  detail::RouteInputs in{
      detail::collectiveName(header.kind), MemoryKind::kDevice, MemoryKind::kDevice, options_.backend, false, {}};
  in.ncclUsable = device_->ncclUsable(&in.ncclUnusableWhy);
  return detail::chooseRoute(in);
}

}  // namespace ringsync
