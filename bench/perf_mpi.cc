#include "perf_mpi.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "closed_form.h"
#include "collectives/half.h"

namespace ringsync::bench {
namespace {

constexpr std::size_t kMaxPieceElements = std::size_t{1} << 30;  // below MPI's INT_MAX count

void checkMpi(int code, const char* call) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}

enum class Half { kFloat16, kBFloat16 };

// The library's own conversions, so the baseline rounds exactly as ringsync does.
template <Half F> float widen(std::uint16_t bits) {
  return F == Half::kFloat16 ? detail::float16ToFloat(bits) : detail::bfloat16ToFloat(bits);
}
template <Half F> std::uint16_t narrow(float value) {
  return F == Half::kFloat16 ? detail::floatToFloat16(value) : detail::floatToBfloat16(value);
}

// MPI_User_function for 16-bit floats: inout[i] = in[i] op inout[i], computed in float32.
template <Half F, int Op> void halfOp(void* in, void* inout, int* length, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *length; ++i) {
    const float x = widen<F>(a[i]), y = widen<F>(b[i]);
    const float r = Op == 0 ? x + y : Op == 1 ? x * y : Op == 2 ? std::min(x, y) : std::max(x, y);
    b[i] = narrow<F>(r);
  }
}

template <Half F> void createHalfOps(MPI_Op (&ops)[4]) {
  checkMpi(MPI_Op_create(&halfOp<F, 0>, 1, &ops[0]), "MPI_Op_create");
  checkMpi(MPI_Op_create(&halfOp<F, 1>, 1, &ops[1]), "MPI_Op_create");
  checkMpi(MPI_Op_create(&halfOp<F, 2>, 1, &ops[2]), "MPI_Op_create");
  checkMpi(MPI_Op_create(&halfOp<F, 3>, 1, &ops[3]), "MPI_Op_create");
}

template <typename T> void divideNative(void* data, std::size_t count, int divisor) {
  T* values = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) values[i] = static_cast<T>(values[i] / divisor);
}

// avg = sum / n once at the end, as ringsync's average (integers truncate toward zero).
void divideAll(void* data, std::size_t count, DataType type, int divisor) {
  switch (type) {
    case DataType::kInt8: return divideNative<std::int8_t>(data, count, divisor);
    case DataType::kUInt8: return divideNative<std::uint8_t>(data, count, divisor);
    case DataType::kInt32: return divideNative<std::int32_t>(data, count, divisor);
    case DataType::kUInt32: return divideNative<std::uint32_t>(data, count, static_cast<std::uint32_t>(divisor));
    case DataType::kInt64: return divideNative<std::int64_t>(data, count, divisor);
    case DataType::kUInt64: return divideNative<std::uint64_t>(data, count, static_cast<std::uint64_t>(divisor));
    case DataType::kFloat32: return divideNative<float>(data, count, divisor);
    case DataType::kFloat64: return divideNative<double>(data, count, divisor);
    case DataType::kFloat16:
    case DataType::kBFloat16:
      for (std::size_t i = 0; i < count; ++i)
        closed_form::storeElement(data, i, type,
                                  static_cast<float>(closed_form::loadElement(data, i, type)) / static_cast<float>(divisor));
      return;
  }
}

}  // namespace

MpiBaseline::MpiBaseline(MPI_Comm comm) : comm_(comm) {
  checkMpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  checkMpi(MPI_Type_contiguous(2, MPI_BYTE, &half_), "MPI_Type_contiguous");
  checkMpi(MPI_Type_commit(&half_), "MPI_Type_commit");
  createHalfOps<Half::kFloat16>(halfOps_[0]);
  createHalfOps<Half::kBFloat16>(halfOps_[1]);
}

MpiBaseline::~MpiBaseline() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& format : halfOps_)
    for (MPI_Op& op : format)
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
  if (half_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_);
}

MPI_Datatype MpiBaseline::mpiType(DataType type) const {
  switch (type) {
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kUInt8: return MPI_UINT8_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kUInt32: return MPI_UINT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kUInt64: return MPI_UINT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return half_;
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
  }
  throw std::invalid_argument("unknown DataType");
}

MPI_Op MpiBaseline::mpiOp(DataType type, ReduceOp op) const {
  const int index = op == ReduceOp::kProd ? 1 : op == ReduceOp::kMin ? 2 : op == ReduceOp::kMax ? 3 : 0;
  if (type == DataType::kFloat16) return halfOps_[0][index];
  if (type == DataType::kBFloat16) return halfOps_[1][index];
  const MPI_Op builtin[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  return builtin[index];
}

void MpiBaseline::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) const {
  const std::size_t elementBytes = dataTypeSize(type);
  const MPI_Datatype datatype = mpiType(type);
  const MPI_Op mpiop = mpiOp(type, op);
  for (std::size_t offset = 0; offset < count; offset += kMaxPieceElements) {
    const int piece = static_cast<int>(std::min(kMaxPieceElements, count - offset));
    void* out = static_cast<std::byte*>(recv) + offset * elementBytes;
    const void* in = send == recv ? MPI_IN_PLACE : static_cast<const std::byte*>(send) + offset * elementBytes;
    checkMpi(MPI_Allreduce(in, out, piece, datatype, mpiop, comm_), "MPI_Allreduce");
  }
  if (op == ReduceOp::kAvg) divideAll(recv, count, type, size_);
}

void MpiBaseline::broadcast(void* buf, std::size_t count, DataType type, int root) const {
  const std::size_t elementBytes = dataTypeSize(type);
  for (std::size_t offset = 0; offset < count; offset += kMaxPieceElements) {
    const int piece = static_cast<int>(std::min(kMaxPieceElements, count - offset));
    checkMpi(MPI_Bcast(static_cast<std::byte*>(buf) + offset * elementBytes, piece, mpiType(type), root, comm_),
             "MPI_Bcast");
  }
}

}  // namespace ringsync::bench
