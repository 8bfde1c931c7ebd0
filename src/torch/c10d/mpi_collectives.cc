#include "mpi_collectives.h"

#include <climits>
#include <memory>
#include <utility>

#include "abandoned_memory.h"
#include "mpi_polling.h"
#include "ringsync/errors.h"
#include "torch_types.h"

namespace ringsync::torch_backend {
namespace {

// Polls the call's request; at the deadline its buffers (and `more`: count arrays MPI reads
// until the call completes) stay MPI's for good, and so does the request (a non-blocking
// collective's request may not be freed while active).
void waitLeavingToMpi(MPI_Request& request, MpiDeadline& deadline, std::vector<at::Tensor> buffers, int size,
                      std::shared_ptr<const void> more = nullptr) {
  try {
    deadline.wait(request, [&] { return "the group's " + std::to_string(size) + " ranks in MPI"; });
  } catch (...) {
    keepUntilExit(std::make_shared<std::vector<at::Tensor>>(std::move(buffers)));
    if (more) keepUntilExit(std::move(more));
    throw;
  }
}

struct Displacements {
  explicit Displacements(std::size_t n) : sendCounts(n), sendAt(n), recvCounts(n), recvAt(n) {}
  std::vector<int> sendCounts, sendAt, recvCounts, recvAt;
};

// One element of `like`'s dtype as an MPI datatype (counts and displacements in elements).
class ElementType {
 public:
  explicit ElementType(const at::Tensor& like) {
    checkMpi(MPI_Type_contiguous(static_cast<int>(like.element_size()), MPI_BYTE, &type_), "MPI_Type_contiguous");
    checkMpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~ElementType() { MPI_Type_free(&type_); }
  ElementType(const ElementType&) = delete;
  ElementType& operator=(const ElementType&) = delete;
  MPI_Datatype type() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

int asMpiInt(std::int64_t value, const char* call, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw InvalidArgument(std::string("ringsync backend: ") + call + ": " + what + " " + std::to_string(value) +
                          " elements is beyond MPI's int counts (at most " + std::to_string(INT_MAX) + ")");
  return static_cast<int>(value);
}

}  // namespace

MpiSide::MpiSide(MPI_Comm comm, const Options& options) : options_(options) {
  checkMpi(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiSide::~MpiSide() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

CallFingerprint MpiSide::fingerprint(::c10d::OpType kind, const at::Tensor& like, std::uint64_t count, int root,
                                     int op) {
  CallFingerprint call;
  call.kind = static_cast<std::int32_t>(kind);
  call.dtype = like.defined() ? static_cast<std::int32_t>(like.scalar_type()) : -1;
  call.root = root;
  call.op = op;
  call.sequence = calls_++;
  call.count = count;
  return call;
}

void agreeThroughMpi(MpiSide& side, const CallFingerprint& call, const char* name) {
  MpiDeadline deadline(side.options(), name);
  agreeOnCall(side.comm(), call, deadline);
}

void gatherThroughMpi(MpiSide& side, const at::Tensor& send, const at::Tensor& recvBlock, int root) {
  MpiDeadline deadline(side.options(), "gather");
  agreeOnCall(side.comm(), side.fingerprint(::c10d::OpType::GATHER, send, send.numel(), root), deadline);
  const ByteCount part(static_cast<std::size_t>(send.nbytes()));
  MPI_Request request = MPI_REQUEST_NULL;
  void* into = side.rank() == root ? recvBlock.data_ptr() : nullptr;
  checkMpi(MPI_Igather(send.data_ptr(), part.count(), part.type(), into, part.count(), part.type(), root, side.comm(),
                       &request),
           "MPI_Igather");
  waitLeavingToMpi(request, deadline, {send, recvBlock}, side.size());
}

void scatterThroughMpi(MpiSide& side, const at::Tensor& sendBlock, const at::Tensor& recv, int root) {
  MpiDeadline deadline(side.options(), "scatter");
  agreeOnCall(side.comm(), side.fingerprint(::c10d::OpType::SCATTER, recv, recv.numel(), root), deadline);
  const ByteCount part(static_cast<std::size_t>(recv.nbytes()));
  MPI_Request request = MPI_REQUEST_NULL;
  const void* from = side.rank() == root ? sendBlock.data_ptr() : nullptr;
  checkMpi(MPI_Iscatter(from, part.count(), part.type(), recv.data_ptr(), part.count(), part.type(), root, side.comm(),
                        &request),
           "MPI_Iscatter");
  waitLeavingToMpi(request, deadline, {sendBlock, recv}, side.size());
}

void alltoallThroughMpi(MpiSide& side, const at::Tensor& send, const std::vector<std::int64_t>& sendCounts,
                        const at::Tensor& recv, const std::vector<std::int64_t>& recvCounts, const char* call) {
  const std::size_t n = sendCounts.size();
  auto counts = std::make_shared<Displacements>(n);
  std::int64_t sendAt = 0, recvAt = 0;
  for (std::size_t r = 0; r < n; ++r) {  // checked before anything is sent, the same on every rank
    counts->sendCounts[r] = asMpiInt(sendCounts[r], call, "a send of");
    counts->recvCounts[r] = asMpiInt(recvCounts[r], call, "a receive of");
    counts->sendAt[r] = asMpiInt(sendAt, call, "an input of");
    counts->recvAt[r] = asMpiInt(recvAt, call, "an output of");
    sendAt += sendCounts[r];
    recvAt += recvCounts[r];
  }
  MpiDeadline deadline(side.options(), call);
  agreeOnCall(side.comm(), side.fingerprint(::c10d::OpType::ALLTOALL_BASE, send, 0), deadline);
  agreeOnCounts(side.comm(), sendCounts, recvCounts, deadline);  // then each pair of ranks agrees
  const ElementType element(send);
  MPI_Request request = MPI_REQUEST_NULL;
  checkMpi(MPI_Ialltoallv(send.data_ptr(), counts->sendCounts.data(), counts->sendAt.data(), element.type(),
                          recv.data_ptr(), counts->recvCounts.data(), counts->recvAt.data(), element.type(),
                          side.comm(), &request),
           "MPI_Ialltoallv");
  waitLeavingToMpi(request, deadline, {send, recv}, side.size(), counts);
}

}  // namespace ringsync::torch_backend
