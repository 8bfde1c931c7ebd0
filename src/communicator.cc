// Public entry points: validate arguments (before touching anything or sending a byte), then the
// core (communicator_impl.h) runs the call.
#include "ringsync/communicator.h"

#include "communicator_impl.h"
#include "ringsync/errors.h"

namespace ringsync {

Communicator::Communicator(MPI_Comm comm, const Options& options) : impl_(std::make_unique<Impl>(comm, options)) {}
Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

namespace {
Communicator::Impl& usable(const std::unique_ptr<Communicator::Impl>& impl) {
  if (!impl) throw InvalidArgument("this ringsync::Communicator was moved from");
  impl->ensureUsable();
  return *impl;
}
const Communicator::Impl& state(const std::unique_ptr<Communicator::Impl>& impl) {
  if (!impl) throw InvalidArgument("this ringsync::Communicator was moved from");
  return *impl;
}
}  // namespace

int Communicator::rank() const { return state(impl_).rank(); }
int Communicator::size() const { return state(impl_).size(); }
int Communicator::localRank() const { return state(impl_).localRank(); }
int Communicator::localSize() const { return state(impl_).localSize(); }
int Communicator::cudaDevice() const { return state(impl_).cudaDevice(); }
const Options& Communicator::options() const { return state(impl_).options(); }
MPI_Comm Communicator::mpiComm() const { return state(impl_).comm(); }
int Communicator::mpiThreadLevel() const { return state(impl_).threadLevel(); }
std::uint64_t Communicator::callCount() const { return state(impl_).callCount(); }
bool Communicator::aborted() const { return state(impl_).aborted(); }
std::string Communicator::abortReason() const { return state(impl_).abortReason(); }
Placement Communicator::lastPlacement() const { return state(impl_).lastPlacement(); }

// Each collective is one Call (collectives/call.h) run by the core's one pipeline.
using detail::Call;
using detail::CollectiveKind;

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CUstream_st* stream) {
  usable(impl_).run(Call{CollectiveKind::kAllreduce, send, recv, count, type, op, -1, stream});
}

void Communicator::reduceScatter(const void* send, void* recv, std::size_t recvCount, DataType type, ReduceOp op,
                                 CUstream_st* stream) {
  usable(impl_).run(Call{CollectiveKind::kReduceScatter, send, recv, recvCount, type, op, -1, stream});
}

void Communicator::allgather(const void* send, void* recv, std::size_t sendCount, DataType type, CUstream_st* stream) {
  usable(impl_).run(Call{CollectiveKind::kAllgather, send, recv, sendCount, type, ReduceOp::kSum, -1, stream});
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) {
  usable(impl_).run(Call{CollectiveKind::kBroadcast, buf, buf, count, type, ReduceOp::kSum, root, stream});
}

void Communicator::barrier() { usable(impl_).run(Call{CollectiveKind::kBarrier}); }

Communicator Communicator::duplicate() const {
  const Impl& s = state(impl_);
  s.ensureUsable();
  return Communicator(std::make_unique<Impl>(s.comm(), s.options()));
}

}  // namespace ringsync
