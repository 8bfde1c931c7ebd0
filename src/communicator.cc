// Public entry points: validate arguments (before touching anything or sending a byte), then the
// core (communicator_impl.h) runs the call.
#include "ringsync/communicator.h"

#include "argument_checks.h"
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

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
  allreduce(send, recv, count, type, op, nullptr);
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             CUstream_st* stream) {
  constexpr const char* kCall = "allreduce";
  Impl& s = usable(impl_);
  detail::checkType(kCall, type);
  detail::checkOp(kCall, op);
  detail::checkCount(kCall, count, type);
  const std::size_t bytes = count * dataTypeSize(type);
  detail::checkBuffer(kCall, "send", send, count, bytes);
  detail::checkBuffer(kCall, "recv", recv, count, bytes);
  detail::checkOverlap(kCall, send, recv, bytes, bytes);
  s.allreduce(send, recv, count, type, op, stream);
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root) {
  broadcast(buf, count, type, root, nullptr);
}

void Communicator::broadcast(void* buf, std::size_t count, DataType type, int root, CUstream_st* stream) {
  constexpr const char* kCall = "broadcast";
  Impl& s = usable(impl_);
  detail::checkType(kCall, type);
  detail::checkCount(kCall, count, type);
  detail::checkBuffer(kCall, "buf", buf, count, count * dataTypeSize(type));
  detail::checkRoot(kCall, root, s.size());
  s.broadcast(buf, count, type, root, stream);
}

void Communicator::allgather(const void* send, void* recv, std::size_t count, DataType type) {
  constexpr const char* kCall = "allgather";
  Impl& s = usable(impl_);
  detail::checkType(kCall, type);
  detail::checkGatheredCount(kCall, count, type, s.size());
  const std::size_t bytes = count * dataTypeSize(type);
  detail::checkBuffer(kCall, "send", send, count, bytes);
  detail::checkBuffer(kCall, "recv", recv, count, bytes * static_cast<std::size_t>(s.size()));
  // In place means send is this rank's own block of recv.
  const void* ownBlock = static_cast<const std::byte*>(recv) + static_cast<std::size_t>(s.rank()) * bytes;
  if (send != ownBlock) detail::checkOverlap(kCall, send, recv, bytes, bytes * static_cast<std::size_t>(s.size()));
  s.allgather(send, recv, count, type);
}

void Communicator::barrier() { usable(impl_).barrier(); }

Communicator Communicator::duplicate() const {
  const Impl& s = state(impl_);
  s.ensureUsable();
  return Communicator(std::make_unique<Impl>(s.comm(), s.options()));
}

}  // namespace ringsync
