#include "mpi_allreduce.h"

#include <algorithm>
#include <cstddef>

#include "mpi_check.h"
#include "ringsync/errors.h"
#include "reduce_kernels.h"

namespace ringsync::detail {
namespace {

// MPI's user functions see `inout = in op inout`; every op here is commutative.
template <DataType kType, ReduceOp kOp> void reduceWithKernels(void* in, void* inout, int* len, MPI_Datatype*) {
  reduceElements(inout, in, inout, static_cast<std::size_t>(*len), kType, kOp);
}

MPI_Op createOp(MPI_User_function* function) {
  MPI_Op op = MPI_OP_NULL;
  RINGSYNC_CHECK_MPI(MPI_Op_create(function, /*commute=*/1, &op));
  return op;
}

template <DataType kType> struct HalfOps {
  MPI_Op sum = createOp(&reduceWithKernels<kType, ReduceOp::kSum>);
  MPI_Op prod = createOp(&reduceWithKernels<kType, ReduceOp::kProd>);
  MPI_Op min = createOp(&reduceWithKernels<kType, ReduceOp::kMin>);
  MPI_Op max = createOp(&reduceWithKernels<kType, ReduceOp::kMax>);
  MPI_Op of(ReduceOp op) const {
    switch (op) {
      case ReduceOp::kProd: return prod;
      case ReduceOp::kMin: return min;
      case ReduceOp::kMax: return max;
      case ReduceOp::kSum:
      case ReduceOp::kAvg: break;
    }
    return sum;
  }
};

template <DataType kType> MPI_Op halfOp(ReduceOp op) {
  static const HalfOps<kType> ops;
  return ops.of(op);
}

// 8-bit sums wrap modulo 256 in ringsync (types.h). Open MPI's built-in MPI_SUM on MPI_INT8_T /
// MPI_UINT8_T saturates where its op/avx component vectorises (Open MPI 4.1 on AVX machines: 100 +
// 100 as int8 gave 127 in the vectorised part of a buffer, -56 in its scalar tail), so these take
// ringsync's kernel. Products (which wrap there too), minima and maxima keep MPI's built-ins.
template <DataType kType> MPI_Op wrappingSum() {
  static const MPI_Op op = createOp(&reduceWithKernels<kType, ReduceOp::kSum>);
  return op;
}

}  // namespace

MPI_Op mpiReduceOp(DataType type, ReduceOp op) {
  if (type == DataType::kFloat16) return halfOp<DataType::kFloat16>(op);
  if (type == DataType::kBFloat16) return halfOp<DataType::kBFloat16>(op);
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
  if (sum && type == DataType::kInt8) return wrappingSum<DataType::kInt8>();
  if (sum && type == DataType::kUInt8) return wrappingSum<DataType::kUInt8>();
  switch (op) {
    case ReduceOp::kProd: return MPI_PROD;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kSum:
    case ReduceOp::kAvg: break;  // the sum, divided afterwards
  }
  return MPI_SUM;
}

MPI_Datatype mpiDatatype(DataType type) {
  switch (type) {
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kUInt32: return MPI_UINT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kUInt64: return MPI_UINT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return MPI_UINT16_T;  // reduced by halfOp
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

void allreduceThroughMpi(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, MPI_Comm comm,
                         int size, Deadline* deadline) {
  const std::size_t elementBytes = dataTypeSize(type);
  const MPI_Datatype datatype = mpiDatatype(type);
  const MPI_Op mpiOp = mpiReduceOp(type, op);
  constexpr std::size_t kMaxPiece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < count;) {
    const int piece = static_cast<int>(std::min(kMaxPiece, count - done));
    auto* out = static_cast<std::byte*>(recv) + done * elementBytes;
    const void* in = send == recv ? MPI_IN_PLACE : static_cast<const std::byte*>(send) + done * elementBytes;
    if (deadline == nullptr) {
      RINGSYNC_CHECK_MPI(MPI_Allreduce(in, out, piece, datatype, mpiOp, comm));
    } else {
      MPI_Request request = MPI_REQUEST_NULL;
      RINGSYNC_CHECK_MPI(MPI_Iallreduce(in, out, piece, datatype, mpiOp, comm, &request));
      for (int finished = 0;;) {
        RINGSYNC_CHECK_MPI(MPI_Test(&request, &finished, MPI_STATUS_IGNORE));
        if (finished) break;
        deadline->idleWaitingFor("MPI_Iallreduce");
      }
      deadline->progressed();
    }
    done += static_cast<std::size_t>(piece);
  }
  if (op == ReduceOp::kAvg) divideElements(recv, count, type, size);
}

void mpiAllreduce(AlgorithmContext& context, const Call& args) {
  // A round first, whatever RINGSYNC_CHECK says: it compares the fingerprints (MismatchError naming
  // the ranks) and, with the check off, still refuses calls MPI would combine wrongly (ranks
  // passing different counts to MPI_Allreduce get truncation errors on some, wrong data on others).
  context.rounds.run(context.header, nullptr, 0, context.deadline);
  firstRoundDone(context);
  for (int r = 0; r < context.size; ++r)
    if (!sameCall(context.rounds.header(r), context.header))
      throw MismatchError(describeCall(context.header) + ": ranks made different calls (RINGSYNC_CHECK=1 names them)");
  allreduceThroughMpi(args.send, args.recv, args.count, args.type, args.op, context.comm, context.size,
                      &context.deadline);
}

}  // namespace ringsync::detail
