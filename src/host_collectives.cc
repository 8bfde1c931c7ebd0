// The Communicator's host-buffer collectives: fingerprint, deadline, algorithm choice, and the
// abort-on-failure rule. The algorithms themselves live in collectives/.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "call_check.h"
#include "collectives/chain_broadcast.h"
#include "collectives/direct_allgather.h"
#include "collectives/direct_allreduce.h"
#include "collectives/reduce_kernels.h"
#include "collectives/ring_allreduce.h"
#include "collectives/split_allreduce.h"
#include "communicator_impl.h"
#include "ringsync/errors.h"

namespace ringsync {

using detail::CallHeader;
using detail::CollectiveKind;
using detail::Route;

namespace {

// RINGSYNC_SMALL_BYTES, and at most kPointToPointSmallBytes when the round is MPI point-to-point
// (ranks on several nodes): there the ring overtakes the direct exchange much earlier than through
// shared memory (options.h). Every rank reaches the same value: the mode is agreed at construction.
std::size_t directLimit(const detail::HeaderExchange& exchange, const Options& options) {
  return exchange.sharedMemory() ? options.smallBytes : std::min(options.smallBytes, Options::kPointToPointSmallBytes);
}

// The checks after a round that carried data: NaN/Inf flags, and every rank's payload of the size
// the call implies (`expectedBytes(r)`). The common case (nothing flagged, sizes right) costs a few
// comparisons; the functions that build error messages run only when something differs.
template <typename ExpectedBytes>
void checkFlagsAndSizes(const detail::HeaderExchange& exchange, ExpectedBytes&& expectedBytes) {
  bool flagged = false, sizesDiffer = false;
  for (int r = 0; r < exchange.size(); ++r) {
    flagged |= (exchange.header(r).flags & detail::kFlagNonFiniteInput) != 0;
    sizesDiffer |= exchange.payloadBytes(r) != expectedBytes(r);
  }
  if (flagged) detail::checkFiniteInputs(exchange);
  if (sizesDiffer)
    for (int r = 0; r < exchange.size(); ++r) detail::checkPayloadBytes(exchange, r, expectedBytes(r));
}

// The checks after a direct round: the fingerprints first, then flags and sizes.
void checkDirectRound(const detail::HeaderExchange& exchange, std::size_t bytes, bool checkCalls) {
  if (checkCalls) detail::checkSameCall(exchange);
  checkFlagsAndSizes(exchange, [bytes](int) { return bytes; });
}

const char* hostAlgorithmName(Communicator::Impl::HostAlgorithm algorithm) {
  switch (algorithm) {
    case Communicator::Impl::HostAlgorithm::kDirect: return "direct";
    case Communicator::Impl::HostAlgorithm::kSplit: return "split";
    case Communicator::Impl::HostAlgorithm::kRing: return "ring";
  }
  return "invalid";
}

// The ring with the fingerprint round overlapped: the headers and the ring's first segment travel
// together, so the check costs no extra latency. If the calls disagree, the early segments are
// taken off the wire before MismatchError is raised, so every rank stays in step (as with the
// plain exchange) and can name the ranks from the headers it received.
void checkedRing(detail::HeaderExchange& exchange, MPI_Comm comm, CallHeader header, detail::RingAllreduce& ring,
                 detail::Deadline& deadline, int rank, int size) {
  header.flags |= detail::kFlagEarlyRingSend;
  exchange.begin(comm, header, nullptr, 0);
  ring.startEarly();
  auto withdraw = [&] {
    const int left = (rank - 1 + size) % size;
    ring.withdrawEarly((exchange.header(left).flags & detail::kFlagEarlyRingSend) != 0, deadline);
  };
  try {
    exchange.complete(deadline);
    detail::checkSameCall(exchange);
    detail::checkFiniteInputs(exchange);
  } catch (const MismatchError&) {
    withdraw();
    throw;
  } catch (const NonFiniteError&) {
    withdraw();
    throw;
  }
  ring.run(deadline);
}

}  // namespace

template <typename Body> void Communicator::Impl::guarded(Body&& body) {
  try {
    body();
  } catch (const MismatchError&) {
    throw;  // detected from the fingerprints before any data moved: peers are still in step
  } catch (const NonFiniteError&) {
    throw;  // likewise
  } catch (const Error& error) {
    abort(error.what());  // timeout or transport failure: messages may still be in flight
    throw;
  } catch (const std::exception& error) {
    abort(error.what());
    throw;
  }
}

// Which host algorithm an all-reduce of `bytes` takes. Every rank reaches the same answer from the
// same call: the inputs are the call's own fields, settings agreed at construction and constants.
Communicator::Impl::HostAlgorithm Communicator::Impl::chooseHostAllreduce(std::size_t count, DataType type) const {
  const std::size_t bytes = count * dataTypeSize(type);
  const bool directFits = bytes <= exchange->maxPayloadBytes();
  const bool splitFits = exchange->sharedMemory() && size > 1 &&
                         detail::SplitChunks(count, size).largestGather() * dataTypeSize(type) <=
                             exchange->maxPayloadBytes();
  switch (options.algorithm) {
    case Algorithm::kRing: return HostAlgorithm::kRing;
    case Algorithm::kDirect: return directFits ? HostAlgorithm::kDirect : HostAlgorithm::kRing;
    case Algorithm::kSplit: return splitFits ? HostAlgorithm::kSplit : HostAlgorithm::kRing;
    case Algorithm::kAuto: break;
  }
  const bool directWanted = directFits && bytes <= directLimit(*exchange, options);
  if (directWanted && (bytes <= Options::kSplitFromBytes || !splitFits)) return HostAlgorithm::kDirect;
  if (splitFits && bytes > Options::kSplitFromBytes) return HostAlgorithm::kSplit;
  return HostAlgorithm::kRing;
}

void Communicator::Impl::hostAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  CallHeader header = nextHeader(CollectiveKind::kAllreduce, count, static_cast<int>(type), static_cast<int>(op), -1);
  if (options.checkFinite && detail::containsNonFinite(send, count, type)) header.flags |= detail::kFlagNonFiniteInput;
  detail::Deadline deadline = deadlineFor(header);
  const std::size_t bytes = count * dataTypeSize(type);
  const HostAlgorithm algorithm = chooseHostAllreduce(count, type);
  guarded([&] {
    if (algorithm == HostAlgorithm::kDirect) {
      exchange->run(comm, header, send, bytes, deadline);
      checkDirectRound(*exchange, bytes, options.checkCalls);
      detail::directReduce(*exchange, recv, count, type, op);
    } else if (algorithm == HostAlgorithm::kSplit) {
      splitAllreduce(header, send, recv, count, type, op, deadline);
    } else if (options.checkCalls && size > 1) {
      detail::RingAllreduce ringCall(comm, rank, size, send, recv, count, type, op, ring, ringScratch);
      checkedRing(*exchange, comm, header, ringCall, deadline, rank, size);
    } else {
      if (options.checkFinite) agree(header, deadline);
      detail::ringAllreduce(comm, rank, size, send, recv, count, type, op, ring, ringScratch, deadline);
    }
  });
  notePlacement(header, Route::kHostRing, hostAlgorithmName(algorithm));
}

// Two shared-memory rounds (collectives/split_allreduce.h). The first carries the fingerprints,
// checked before any peer's data is read; the second only finished chunks of the same call.
void Communicator::Impl::splitAllreduce(const CallHeader& header, const void* send, void* recv, std::size_t count,
                                        DataType type, ReduceOp op, detail::Deadline& deadline) {
  const detail::SplitChunks chunks(count, size);
  const std::size_t elementBytes = dataTypeSize(type);
  exchange->run(comm, header, detail::splitGatherPieces(chunks, rank, send, elementBytes), deadline);
  if (options.checkCalls) detail::checkSameCall(*exchange);
  checkFlagsAndSizes(*exchange, [&](int r) { return (count - chunks.length(r)) * elementBytes; });
  detail::splitReduceOwnChunk(*exchange, chunks, rank, send, recv, type, op);
  const std::byte* finished = static_cast<const std::byte*>(recv) + chunks.begin(rank) * elementBytes;
  exchange->run(comm, header, finished, chunks.length(rank) * elementBytes, deadline);
  checkFlagsAndSizes(*exchange, [&](int r) { return chunks.length(r) * elementBytes; });
  detail::splitCopyPeerChunks(*exchange, chunks, rank, recv, elementBytes);
}

void Communicator::Impl::hostBroadcast(void* buf, std::size_t count, DataType type, int root) {
  const CallHeader header = nextHeader(CollectiveKind::kBroadcast, count, static_cast<int>(type), -1, root);
  detail::Deadline deadline = deadlineFor(header);
  const std::size_t bytes = count * dataTypeSize(type);
  const bool direct = bytes <= exchange->maxPayloadBytes() && bytes <= directLimit(*exchange, options);
  guarded([&] {
    if (direct) {
      exchange->run(comm, header, rank == root ? buf : nullptr, rank == root ? bytes : 0, deadline);
      if (options.checkCalls) detail::checkSameCall(*exchange);
      detail::checkPayloadBytes(*exchange, root, bytes);
      if (rank != root && bytes > 0) std::memcpy(buf, exchange->payload(root), bytes);
    } else {
      if (options.checkCalls) agree(header, deadline);
      detail::chainBroadcast(comm, rank, size, buf, bytes, root, ring, deadline);
    }
  });
  notePlacement(header, Route::kHostRing, direct ? "direct" : "chain");
}

void Communicator::Impl::hostAllgather(const void* send, void* recv, std::size_t count, DataType type) {
  const CallHeader header = nextHeader(CollectiveKind::kAllgather, count, static_cast<int>(type), -1, -1);
  detail::Deadline deadline = deadlineFor(header);
  guarded([&] {
    if (options.checkCalls) agree(header, deadline);
    detail::directAllgather(comm, rank, size, send, recv, count * dataTypeSize(type), deadline);
  });
  notePlacement(header, Route::kHostRing, "direct");
}

void Communicator::Impl::hostBarrier() {
  const CallHeader header = nextHeader(CollectiveKind::kBarrier, 0, -1, -1, -1);
  detail::Deadline deadline = deadlineFor(header);
  // Hearing from every peer is the barrier; the fingerprints come along for free.
  guarded([&] {
    exchange->run(comm, header, nullptr, 0, deadline);
    if (options.checkCalls) detail::checkSameCall(*exchange);
  });
  notePlacement(header, Route::kHostRing, "direct");
}

void Communicator::Impl::ncclAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                       CUstream_st* stream) {
  const CallHeader header = nextHeader(CollectiveKind::kAllreduce, count, static_cast<int>(type), static_cast<int>(op), -1);
  detail::Deadline deadline = deadlineFor(header);
  guarded([&] {
    if (options.checkCalls && size > 1) agree(header, deadline);
    device->ncclAllreduce(send, recv, count, type, op, stream);
  });
  notePlacement(header, Route::kNccl, "nccl");
}

void Communicator::Impl::ncclBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) {
  const CallHeader header = nextHeader(CollectiveKind::kBroadcast, count, static_cast<int>(type), -1, root);
  detail::Deadline deadline = deadlineFor(header);
  guarded([&] {
    if (options.checkCalls && size > 1) agree(header, deadline);
    device->ncclBroadcast(buf, count, type, root, stream);
  });
  notePlacement(header, Route::kNccl, "nccl");
}

// The staged path runs this communicator's host collectives between its copies; a failure in a
// copy (CUDA) must abort like a failure inside the collective, or peers would wait on this rank.
void Communicator::Impl::stagedAllreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                         CUstream_st* stream) {
  guarded([&] { device->stagedAllreduce(send, recv, count, type, op, stream, *this); });
  lastRoute = Route::kStaged;
}

void Communicator::Impl::stagedBroadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) {
  guarded([&] { device->stagedBroadcast(buf, count, type, root, stream, *this); });
  lastRoute = Route::kStaged;
}

}  // namespace ringsync
